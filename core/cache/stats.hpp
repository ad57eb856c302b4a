// kjit::cache::Stats: counters of cache activity. Atomic, so concurrent users of one Store may
// count without a lock. A Runtime keeps one (request::Counters, with registry_hits): its Store,
// its RemoteTier and its compile service count into it, each event once by its one owner. PersistentStats (persistent_stats.hpp) accumulates them across processes
// in the cache directory for `kjit cache stats`; StoreStats::flush feeds it. Each counter is
// listed once, in KJIT_CACHE_COUNTERS: Stats, StatsSnapshot, the persistent stats file and the
// copy into the public kjit::CacheStats (same field names) all expand it.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>

// X(name) per counter. The name is also the counter's line in the persistent stats file
// ("hits 12"), in this order: renaming one makes existing files lose that total.
#define KJIT_CACHE_COUNTERS(X) \
  X(hits) X(misses) X(compiles) X(waits) X(damaged) X(evictions) X(bytes_written) X(bytes_read) X(store_failures) \
  X(remote_requests) X(remote_hits) X(remote_misses) X(remote_rejected) X(remote_errors) X(remote_timeouts) \
  X(remote_writes) X(remote_dropped) X(remote_bytes_read) X(remote_bytes_written) X(remote_latency_us) \
  X(remote_http_hits) X(remote_http_errors) X(remote_backfills) X(remote_shard_down)

namespace kjit::cache {

struct StatsSnapshot {
#define KJIT_CACHE_DECLARE_COUNTER(name) std::uint64_t name = 0;
  KJIT_CACHE_COUNTERS(KJIT_CACHE_DECLARE_COUNTER)
#undef KJIT_CACHE_DECLARE_COUNTER
  StatsSnapshot& operator+=(const StatsSnapshot& o);
  StatsSnapshot& operator-=(const StatsSnapshot& o);  // saturates at zero
  friend bool operator==(const StatsSnapshot&, const StatsSnapshot&) = default;
};

struct Stats {
#define KJIT_CACHE_DECLARE_COUNTER(name) std::atomic<std::uint64_t> name{0};
  KJIT_CACHE_COUNTERS(KJIT_CACHE_DECLARE_COUNTER)
#undef KJIT_CACHE_DECLARE_COUNTER
  StatsSnapshot snapshot() const;
};

}  // namespace kjit::cache
