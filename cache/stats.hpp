// kjit::cache::Stats: counters of cache activity. Atomic, so concurrent users of one Store may
// count without a lock. PersistentStats (persistent_stats.hpp) accumulates them across processes
// in the cache directory for `kjit cache stats`; Store::flush_stats feeds it.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>

namespace kjit::cache {

struct StatsSnapshot {
  std::uint64_t hits = 0, misses = 0, compiles = 0, waits = 0, damaged = 0, evictions = 0,
                bytes_written = 0, bytes_read = 0, store_failures = 0;
  StatsSnapshot& operator+=(const StatsSnapshot& o);
  StatsSnapshot& operator-=(const StatsSnapshot& o);  // saturates at zero
  friend bool operator==(const StatsSnapshot&, const StatsSnapshot&) = default;
};

struct Stats {
  std::atomic<std::uint64_t> hits{0}, misses{0}, compiles{0}, waits{0}, damaged{0}, evictions{0},
      bytes_written{0}, bytes_read{0}, store_failures{0};
  StatsSnapshot snapshot() const;
};

}  // namespace kjit::cache
