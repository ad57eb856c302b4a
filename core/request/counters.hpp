// kjit::request::Counters: a Runtime's one counter list (this process): KJIT_CACHE_COUNTERS
// (cache/stats.hpp) plus registry_hits. Each event is counted once, by its one owner:
//   registry_hits                                         ModuleRegistry
//   hits, misses, compiles, waits (a request's outcome)   CompileService and its Storage
//   damaged, evictions, bytes_read, bytes_written,        cache::Store, StoreMaintenance (the compile
//   store_failures                                        service adds one where no store could be opened)
//   remote_*                                              cache::RemoteTier
// The store and the tier count into `cache` (StoreConfig::stats, RemoteTier::open), so the
// stats' flush into the cache folder (StoreStats) (`kjit cache stats`) and RuntimeStats read the same table.
#pragma once

#include <kjit/runtime_config.hpp>

#include "core/cache/stats.hpp"

#include <atomic>
#include <cstdint>

namespace kjit::request {

struct Counters {
  std::atomic<std::uint64_t> registry_hits{0};
  cache::Stats cache;

  // RuntimeStats has one field a counter, of the same name (the disk's `hits` is `disk_hits`).
  RuntimeStats snapshot() const {
    RuntimeStats s;
    s.registry_hits = registry_hits.load(std::memory_order_relaxed);
    const cache::StatsSnapshot c = cache.snapshot();
    s.disk_hits = c.hits;
    auto copy = [](auto& out, const cache::StatsSnapshot& in) {
#define KJIT_COPY_COUNTER(name) \
  if constexpr (requires { out.name; }) out.name = in.name;
      KJIT_CACHE_COUNTERS(KJIT_COPY_COUNTER)
#undef KJIT_COPY_COUNTER
    };
    copy(s, c);
    return s;
  }
};

// Every counter of the list has its field in RuntimeStats and RuntimeStats has no other.
#define KJIT_COUNT_COUNTER(name) +1
static_assert(sizeof(RuntimeStats) == (1 KJIT_CACHE_COUNTERS(KJIT_COUNT_COUNTER)) * sizeof(std::uint64_t),
              "RuntimeStats must have one field for registry_hits and for each of KJIT_CACHE_COUNTERS");
#undef KJIT_COUNT_COUNTER

}  // namespace kjit::request
