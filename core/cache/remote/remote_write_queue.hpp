// kjit::cache::RemoteWriteQueue: what a RemoteTier hands to a Background thread (the compile
// service's one worker, or one of its own when given none): its writes, backfills and lock
// releases as jobs, bounded by a count and a byte budget of its own (a write that does not fit is
// dropped, a release is never dropped for room), and the recurring refreshes of the fleet locks
// this process holds. drain() waits until every job admitted ran or was dropped. Thread-safe;
// nothing here throws past allocation failures. fork(): a child has none of its parent's jobs
// pending nor locks held.
#pragma once

#include "core/system/background.hpp"

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace kjit::cache {

class RemoteWriteQueue {
public:
  struct Limits {
    std::size_t capacity = 256;           // jobs admitted and not yet done
    std::uint64_t max_bytes = 256ull << 20;  // the bytes they hold
  };
  enum class Admitted {
    no,             // nothing is queued
    with_value,     // the job carries its `bytes`
    without_value,  // a job that must run (a lock's release) carries nothing
  };

  // `shared` must outlive the queue; null: a Background of its own.
  RemoteWriteQueue(system::Background* shared, Limits limits);
  ~RemoteWriteQueue();  // stop()
  RemoteWriteQueue(const RemoteWriteQueue&) = delete;
  RemoteWriteQueue& operator=(const RemoteWriteQueue&) = delete;

  // Room for a job holding `bytes`, when `wanted` (the caller would send it): with_value while the
  // count and byte budget allow; else without_value when it `must_run`, else no. Each admitted
  // job must be posted.
  Admitted admit(std::uint64_t bytes, bool wanted, bool must_run);
  // Queues an admitted job holding `held` bytes: run() on the Background thread, or drop() when
  // it never runs; false when it was dropped at once (the Background is finished or full).
  bool post(std::uint64_t held, std::function<void()> run, std::function<void()> drop);
  void drain();
  // With its own Background: runs what is queued (all of it within Background::Limits::exit_bound),
  // then stops. With a shared one: what is still queued is dropped. The lock refreshes stop.
  // Idempotent; the owner calls it before what the jobs use goes.
  void stop();

  system::Background& background() { return *m_background; }
  // A fleet lock `token` this process holds, refreshed by `refresh` until released.
  void hold(const std::string& token, system::Background::Recurring refresh);
  // The refresh of `token`'s lock (none when it is not held), no longer held: it stops when the
  // returned handle goes.
  system::Background::Recurring release(const std::string& token);

  void lock_for_fork() { m_mutex.lock(); }
  void unlock_after_fork() { m_mutex.unlock(); }
  void reset_in_child();

private:
  void done(std::uint64_t bytes);  // an admitted job ran or was dropped

  Limits m_limits;
  std::unique_ptr<system::Background> m_own;
  system::Background* m_background;
  bool m_stopped = false;
  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::size_t m_pending = 0;  // admitted and not yet done
  std::uint64_t m_pending_bytes = 0;
  std::map<std::string, system::Background::Recurring> m_held;  // token -> its refresh
};

}  // namespace kjit::cache
