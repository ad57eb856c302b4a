// kjit::cache::RemoteTier: the shared second tier behind the local disk (a fleet's Redis, or
// several: shards). It decides what is read, written and trusted, over RemoteStores that only
// move bytes:
//   - each key lives on one shard, chosen by weighted rendezvous hashing over the list
//     (rendezvous.hpp): its value, its lock, its writes; one server is a list of one.
//   - get() returns a value only once it is a whole, checked entry recorded under the key asked
//     for, and (with a Signer) one whose HMAC tag is valid; anything else is `rejected`, a miss.
//   - put_async() writes on a Background thread (the compile service's one worker, or one of
//     the tier's own when it is given none), through a bounded queue: a full queue, a value over
//     max_value_size, a read-only tier or a shard that is down or refuses writes drop the write
//     (and count it); nothing on the request path waits for a write.
//   - lock_or_wait() lets the nodes that miss a key together compile it once: the first takes
//     a lock that expires unless its holder (the Background thread) refreshes it; the others poll
//     for the value, and compile by themselves past the wait bound or when the remote fails.
//   - per shard: after `failures_before_backoff` failures in a row (a call that failed or timed
//     out) the shard is skipped for `backoff` (one warning when it goes down, one note when it
//     is back): its keys are misses (counted in remote_shard_down), never errors, and never go
//     to another shard. A slow, down or restarted server costs a request at most a few
//     timeouts. A shard that answers but refuses writes (Redis at maxmemory: OOM; a read-only
//     replica) is not down: as many refusals in a row stop its writes and locks for `backoff`
//     (one warning), and its reads go on.
// Names on the server: kjit:<32 hex> (values) and kjit:lock:<32 hex> (locks). Counts into the
// Stats it is given (the remote_* counters). Thread-safe. No CUDA here; nothing here throws
// past allocation failures. fork(): a child never speaks on its parent's connections (it opens its
// own on first use) and has none of its parent's writes queued nor locks held.
#pragma once

#include "cache/at_fork.hpp"
#include "cache/background.hpp"
#include "cache/entry.hpp"
#include "cache/key.hpp"
#include "cache/remote/remote_store.hpp"
#include "cache/remote/rendezvous.hpp"
#include "cache/remote/signer.hpp"
#include "cache/remote_list.hpp"
#include "cache/result.hpp"
#include "cache/stats.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::cache {

struct RemoteConfig {
  // The shards: one redis://host:port[/db] or unix:///path.sock, or a comma list of them with
  // weights (KJIT_REMOTE_CACHE's spelling, cache/remote_list.hpp; http(s) entries are refused here).
  std::string url;
  bool read_only = false;               // read, never write (nor lock)
  std::optional<Signer> signer;         // sign what is written, load only valid tags
  RemoteTimeouts timeouts;
  std::chrono::milliseconds ttl{0};     // values expire after this; 0: never
  std::uint64_t max_value_size = 64ull << 20;  // larger values are not sent
  std::size_t queue_capacity = 256;     // writes waiting for the Background thread
  std::uint64_t queue_max_bytes = 256ull << 20;
  std::chrono::milliseconds lock_ttl{std::chrono::seconds(10)};  // a dead holder's lock lasts this
  std::chrono::milliseconds poll_every{std::chrono::milliseconds(20)};  // the longest pause between polls
  unsigned failures_before_backoff = 3;  // per shard; as many refused writes stop its writes
  std::chrono::milliseconds backoff{std::chrono::seconds(30)};
};

struct RemoteGet {
  enum class Outcome { hit, miss, rejected, unavailable } outcome = Outcome::miss;
  std::string bytes;                 // hit: the checked entry (signature removed)
  std::vector<SectionRef> sections;  // hit: where each section lies in bytes
  std::string message;               // rejected, unavailable: why
  std::string shard;                 // the shard asked (its address, password redacted)
  bool shard_down = false;           // unavailable: the shard is skipped (back-off), nothing was asked
};

// What a tier knows of one shard in this process.
struct RemoteShardState {
  std::string name;  // the address, password redacted
  double weight = 1;
  bool down = false;             // skipped until its back-off ends
  bool refusing_writes = false;  // writes and locks skipped until their back-off ends
};

struct RemoteLock {
  enum class Outcome {
    acquired,     // this node compiles; hand `token` to put_async() or release_async()
    value,        // another node stored it while this one waited: `value`
    timed_out,    // waited as long as allowed: compile without the lock
    unavailable,  // the remote failed (or is skipped): compile without it
  } outcome = Outcome::unavailable;
  std::string token;
  RemoteGet value;
  std::string message;
};

class RemoteTier {
public:
  enum class Severity { warning, info };
  using Log = std::function<void(Severity, std::string_view)>;  // called from any thread

  // A Failure: the URL is wrong (nothing is contacted here). Writes, releases and lock refreshes
  // run on `background` (which must outlive the tier), or on a Background of the tier's own.
  static Result<std::unique_ptr<RemoteTier>> open(RemoteConfig config, Stats& stats, Log log,
                                                  Background* background = nullptr);
  // With its own Background: writes what is queued (each write bounded by the timeouts, all of
  // them by Background::Limits::exit_bound), then stops. With a shared one: what is still queued
  // for this tier is dropped (the owner finishes its Background first).
  ~RemoteTier();
  RemoteTier(const RemoteTier&) = delete;
  RemoteTier& operator=(const RemoteTier&) = delete;

  RemoteGet get(const Key& key);
  RemoteLock lock_or_wait(const Key& key, std::chrono::milliseconds timeout,
                          std::chrono::milliseconds progress_every,
                          const std::function<void(std::chrono::milliseconds)>& progress);
  // Sends serialized entry bytes for `key` (signed when there is a secret), then releases
  // `token`'s lock when not empty. Returns false when the write was dropped.
  bool put_async(const Key& key, std::string entry_bytes, std::string token = {});
  void release_async(const Key& key, std::string token);
  // Waits until every queued write was attempted.
  void drain();
  // A round trip to every shard through the request path's connections: what each server says
  // of itself, joined; the first failure when one does not answer.
  Result<std::string> ping();

  const RemoteConfig& config() const { return m_config; }
  bool read_only() const { return m_config.read_only; }
  // The shard that holds `key` (an index into shards()).
  std::size_t shard_of(const Key& key) const;
  std::vector<RemoteShardState> shards() const;

private:
  struct Shard;
  // A write's success (a SET, a lock taken) ends a shard's refusal of writes; any success ends its
  // failures (a lock's refresh or release succeeds on a full server too: Call::read).
  enum class Call { read, write };
  RemoteTier(RemoteConfig config, std::vector<std::unique_ptr<Shard>> shards, Stats& stats, Log log,
             Background* background);
  Shard& shard_for(const Key& key) { return *m_shards[shard_of(key)]; }
  RemoteGet fetch(Shard& shard, const Key& key);  // one GET on the request connection, checked; no counting of the request
  bool available(const Shard& shard) const;
  bool writable(const Shard& shard) const;  // available and not refusing writes
  template <class T>
  bool record(Shard& shard, const Result<T>& r, Call call = Call::read);  // counts and tracks failures; true on success
  // On the Background thread: writes `value` (empty: none), then releases `token`'s lock.
  void write(const Key& key, std::string value, const std::string& token);
  void done(std::uint64_t bytes);  // a queued write ran or was dropped
  RemoteStore* writer_store(Shard& shard);  // the worker's connection, opened on first use
  std::string encode(std::string entry_bytes) const;
  std::string skipped_message(const Shard& shard) const;

  RemoteConfig m_config;
  Stats& m_stats;
  Log m_log;

  std::vector<std::unique_ptr<Shard>> m_shards;  // fixed at open
  std::vector<RendezvousShard> m_ring;           // their names and weights, for rendezvous_shard

  std::unique_ptr<Background> m_own_background;  // when none was given
  Background* m_background;
  std::mutex m_pending_mutex;
  std::condition_variable m_pending_cv;
  std::size_t m_pending = 0;         // writes and releases queued or running
  std::uint64_t m_pending_bytes = 0;
  std::map<std::string, Background::Recurring> m_held;  // token -> refresh of a lock this process holds
  AtFork::Registration m_fork;  // last: gone before what its handlers use
};

}  // namespace kjit::cache
