// kjit::cache::RemoteLevel: one server of a RemoteTier (a shard of its first level, or a level of
// its own): its address, weight and backend's row (remote_backend.hpp), its two connections (the
// request path's, one call at a time, and the Background thread's, opened on first use), and its
// health:
//   - failures in a row (a call that failed or timed out) put it in back-off: skipped until then;
//   - writes refused in a row (the server answered and refused) pause its writes and locks, while
//     its reads go on;
//   - requests it missed while a later level hit count up to a bound, reported once.
// It says what changed (record's Outcome); the tier counts and tells. Thread-safe. Nothing here
// throws past allocation failures. fork(): a child forgets its parent's connections (never closes
// nor speaks on them) and opens its own on first use.
#pragma once

#include "core/cache/remote/remote_backend.hpp"
#include "core/cache/remote/remote_list.hpp"
#include "core/cache/remote/remote_store.hpp"
#include "core/system/result.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace kjit::cache {

class RemoteLevel {
public:
  enum class Call { read, write };  // a write's success ends a refusal of writes; any success ends failures
  struct Policy {
    unsigned failures_before_backoff = 3;
    std::chrono::milliseconds backoff{std::chrono::seconds(30)};
  };
  // What a call's outcome changed, for the tier to tell (each once, when it happens).
  struct Outcome {
    bool ok = false;
    bool went_down = false;       // failures_before_backoff failures in a row: skipped for the back-off
    bool came_back = false;       // it answered again after being down
    bool began_refusing = false;  // as many refused writes in a row: its writes skipped for the back-off
    bool takes_writes = false;    // a write succeeded after it refused them
    unsigned in_row = 0;          // the failures (or refusals) in a row, this one included
  };

  RemoteLevel(RemoteListEntry entry, const RemoteBackend& backend, RemoteOpenOptions options,
              std::unique_ptr<RemoteStore> request);
  RemoteLevel(const RemoteLevel&) = delete;
  RemoteLevel& operator=(const RemoteLevel&) = delete;

  const std::string& name() const { return m_entry.name; }  // the address, password redacted
  double weight() const { return m_entry.weight; }
  const RemoteBackend& backend() const { return m_backend; }

  // fn(store) on the request path's connection, one caller at a time.
  template <class F>
  auto ask(F&& fn) {
    std::lock_guard lock(m_request_mutex);
    return fn(*m_request);
  }
  // The Background thread's own connection, opened on first use; null when it cannot be opened.
  RemoteStore* writer();

  bool available() const;  // not in back-off
  bool writable() const;   // available, and its writes not paused
  // Records a call's outcome (nullptr: it succeeded).
  Outcome record(const system::Failure* failure, Call call, const Policy& policy);
  // A request it missed while a later level hit: true exactly once, when `bound` of them came in a
  // row (a hit here starts the count again).
  bool missed_while_another_hit(unsigned bound);
  void hit() { m_missed_in_row.store(0, std::memory_order_relaxed); }

  // fork(): the request connection's lock held across it; in the child, fresh connections.
  void lock_for_fork() { m_request_mutex.lock(); }
  void unlock_after_fork() { m_request_mutex.unlock(); }
  void reset_in_child();

private:
  RemoteListEntry m_entry;
  const RemoteBackend& m_backend;
  RemoteOpenOptions m_options;  // for its new connections (the worker's, a child's)

  std::mutex m_request_mutex;
  std::unique_ptr<RemoteStore> m_request;
  std::unique_ptr<RemoteStore> m_writer;

  std::atomic<unsigned> m_failures{0};
  std::atomic<std::int64_t> m_down_until{0};  // steady_clock ticks; 0: never down
  std::atomic<bool> m_down{false};
  std::atomic<unsigned> m_refusals{0};
  std::atomic<std::int64_t> m_refusing_until{0};
  std::atomic<bool> m_refusing{false};
  std::atomic<unsigned> m_missed_in_row{0};
  std::atomic<bool> m_told_missing{false};
};

}  // namespace kjit::cache
