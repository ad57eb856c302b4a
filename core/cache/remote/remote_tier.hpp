// kjit::cache::RemoteTier: the shared second tier behind the local disk (a fleet's Redis shards,
// then HTTP and S3 stores). It decides what is read, written and trusted, over RemoteStores that
// only move bytes, one per server (RemoteLevel: its connections and health), in levels, fastest
// first (parse_remote_list: the shards, then each level of KJIT_REMOTE_CACHE in the order given).
// What a server can do is its backend's row's (remote_backend.hpp), never its URL's spelling:
//   - the first level is one server or several shards: each key, its value and its fleet lock
//     live on the one shard weighted rendezvous hashing picks (rendezvous.hpp); a key's levels
//     are its shard, then the other levels.
//   - get() asks the key's levels in order and returns a value only once it is a whole, checked
//     entry recorded under the key asked for, and (with a Signer) one whose signature is valid;
//     anything else is `rejected`, a miss, and the next level is asked. A hit in a slower level is
//     written back to the faster ones (a backfill: a background write, counted in remote_backfills).
//   - a level that missed `miss_warning_after` requests in a row that a later level hit says so,
//     once (a warning: its address, bucket, region or prefix may be wrong).
//   - without a key to sign with, a write never replaces a signed value (RemoteStore::
//     put_unless_prefixed: one Redis script; over HTTP and S3 a check before the write), and a
//     node without a key against a store that holds signed values says so once (a warning).
//   - put_async() writes to the key's levels on a Background thread (RemoteWriteQueue: the
//     compile service's one worker, or one of the tier's own when it is given none), bounded: a
//     full queue, a value over max_value_size, a read-only tier or levels that are down (or refuse
//     writes) drop the write (and count it); nothing on the request path waits for a write.
//   - lock_or_wait() lets the nodes that miss a key together compile it once, on the key's shard
//     (a level whose row has locks; a tier with none, HTTP and S3 alone, takes no lock): the first
//     node takes a lock that expires unless its holder (the Background thread) refreshes it; the
//     others poll for the value, and compile by themselves past the wait bound or when the remote
//     fails.
//   - each server on its own: after `failures_before_backoff` failures in a row (a call that
//     failed or timed out) it is skipped for `backoff` (one warning when it goes down, one note
//     when it is back): a down shard's keys are misses (counted in remote_shard_down), never
//     errors, and never go to another shard; a slow, down or restarted server costs a request at
//     most a few timeouts. A server that answers but refuses writes (Redis at maxmemory: OOM; a
//     read-only replica) is not down: as many refusals in a row stop its writes and locks for
//     `backoff` (one warning), and its reads go on.
// Names on the server: kjit:<32 hex> (values) and kjit:lock:<32 hex> (locks); an HTTP or S3 store
// keeps a name under <base>/ac/<sha256 of the name>. Counts into the Stats it is given (the
// remote_* counters; the levels over HTTP, http(s):// and s3://, also in remote_http_*). Thread-safe. No CUDA here; nothing here
// throws past allocation failures. fork(): a child never speaks on its parent's connections (it
// opens its own on first use) and has none of its parent's writes queued nor locks held.
#pragma once

#include "core/cache/entry.hpp"
#include "core/cache/key.hpp"
#include "core/cache/remote/remote_level.hpp"
#include "core/cache/remote/remote_store.hpp"
#include "core/cache/remote/remote_write_queue.hpp"
#include "core/cache/remote/rendezvous.hpp"
#include "core/cache/remote/signer.hpp"
#include "core/cache/stats.hpp"
#include "core/system/at_fork.hpp"
#include "core/system/background.hpp"
#include "core/system/result.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::cache {

struct RemoteConfig {
  // A list (KJIT_REMOTE_CACHE's spelling, remote_list.hpp): redis://host:port[/db] and
  // unix:///path.sock shards with weights ("redis://a,redis://b(2)"), then http[s]://host/prefix
  // and s3://bucket/prefix levels.
  std::string url;
  std::string http_auth_file;           // the HTTP levels' credentials (read_http_credentials); empty: none
  bool read_only = false;               // read, never write (nor lock)
  std::optional<Signer> signer;         // sign what is written, load only valid signatures; one
                                        // that cannot sign (ed25519 public keys) makes it read_only
  RemoteTimeouts timeouts;
  std::chrono::milliseconds ttl{0};     // values expire after this; 0: never
  std::uint64_t max_value_size = 64ull << 20;  // larger values are not sent
  std::size_t queue_capacity = 256;     // writes waiting for the system::Background thread
  std::uint64_t queue_max_bytes = 256ull << 20;
  std::chrono::milliseconds lock_ttl{std::chrono::seconds(10)};  // a dead holder's lock lasts this
  std::chrono::milliseconds poll_every{std::chrono::milliseconds(20)};  // the longest pause between polls
  unsigned failures_before_backoff = 3;  // per server; as many refused writes stop its writes
  std::chrono::milliseconds backoff{std::chrono::seconds(30)};
  unsigned miss_warning_after = 64;  // a level's misses in a row that a later level hit, then one warning
};

struct RemoteGet {
  enum class Outcome { hit, miss, rejected, unavailable } outcome = Outcome::miss;
  std::string bytes;                 // hit: the checked entry (signature removed)
  std::vector<SectionRef> sections;  // hit: where each section lies in bytes
  std::string message;               // rejected, unavailable: why
  // Not a hit: why each server asked missed, joined by "; ": "absent from <url>", "rejected: ...",
  // "<url> is down (skipped after repeated failures)", "unreachable: ...".
  std::string why;
  // rejected: the value is signed and this process has no key to check it (a misconfigured node)
  bool signed_without_key = false;
  std::string shard;         // the key's shard (its address, password redacted); empty without one
  bool shard_down = false;   // that shard is skipped (back-off): nothing was asked of it
};

// What a tier knows of one of its shards in this process.
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
  static system::Result<std::unique_ptr<RemoteTier>> open(RemoteConfig config, Stats& stats, Log log,
                                                  system::Background* background = nullptr);
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
  // A round trip through each level's request-path connection: what each server says of itself
  // ("redis 7.0.15; http 404 nginx/1.22.1"); a Failure names the first level that did not answer.
  system::Result<std::string> ping();

  const RemoteConfig& config() const { return m_config; }
  bool read_only() const { return m_config.read_only; }
  // The shard that holds `key` (an index into shards()); 0 without shards.
  std::size_t shard_of(const Key& key) const;
  std::vector<RemoteShardState> shards() const;

private:
  RemoteTier(RemoteConfig config, std::vector<std::unique_ptr<RemoteLevel>> levels, std::size_t shards, Stats& stats,
             Log log, system::Background* background);
  // One GET on a level's request connection, checked; no counting of the request.
  RemoteGet fetch(RemoteLevel& level, const Key& key);
  // The levels of `key` as bits (bit i: m_levels[i]): its shard, then the other levels.
  std::uint64_t levels_of(const Key& key) const;
  RemoteLevel* lock_level(const Key& key) const;  // null: no level has locks
  // Counts a call's outcome and tells what changed (RemoteLevel::record); true on success.
  template <class T>
  bool record(RemoteLevel& level, const system::Result<T>& r, RemoteLevel::Call call = RemoteLevel::Call::read);
  // Queues a write of `entry_bytes` to the levels in `levels` (bit i: m_levels[i]) and the release
  // of `token`'s lock; put_async's body. `backfill`: a slower level's hit written back.
  bool post_write(const Key& key, std::string entry_bytes, std::string token, std::uint64_t levels, bool backfill);
  // On the Background thread: writes `value` (empty: none) to `levels`, then releases `token`'s lock.
  void write(const Key& key, std::string value, const std::string& token, std::uint64_t levels, bool backfill);
  std::string encode(std::string entry_bytes) const;
  // Once a tier: `level` holds signed values and this process has no key (it can neither load
  // them nor replace them: its unsigned writes leave them alone). Later ones are notes.
  void tell_signed_without_key(const RemoteLevel& level, std::string_view detail);

  RemoteConfig m_config;
  std::string m_shown_url;  // m_config.url with its passwords redacted: the one kjit prints
  Stats& m_stats;
  Log m_log;
  std::vector<std::unique_ptr<RemoteLevel>> m_levels;  // fastest first (the shards, then the levels); never empty
  std::size_t m_shards = 0;                            // the first m_shards are the first level's shards
  std::vector<RendezvousShard> m_ring;                 // their names and weights, for rendezvous_shard
  RemoteWriteQueue m_queue;                            // after what its jobs use: stopped first
  std::atomic<bool> m_told_signed{false};  // tell_signed_without_key said it
  system::AtFork::Registration m_fork;     // last: gone before what its handlers use
};

}  // namespace kjit::cache
