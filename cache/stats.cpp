#include "cache/stats.hpp"

namespace kjit::cache {

StatsSnapshot& StatsSnapshot::operator+=(const StatsSnapshot& o) {
  hits += o.hits;
  misses += o.misses;
  compiles += o.compiles;
  waits += o.waits;
  damaged += o.damaged;
  evictions += o.evictions;
  bytes_written += o.bytes_written;
  bytes_read += o.bytes_read;
  store_failures += o.store_failures;
  return *this;
}

StatsSnapshot& StatsSnapshot::operator-=(const StatsSnapshot& o) {
  auto sub = [](std::uint64_t& a, std::uint64_t b) { a = a > b ? a - b : 0; };
  sub(hits, o.hits);
  sub(misses, o.misses);
  sub(compiles, o.compiles);
  sub(waits, o.waits);
  sub(damaged, o.damaged);
  sub(evictions, o.evictions);
  sub(bytes_written, o.bytes_written);
  sub(bytes_read, o.bytes_read);
  sub(store_failures, o.store_failures);
  return *this;
}

StatsSnapshot Stats::snapshot() const {
  StatsSnapshot s;
  s.hits = hits.load(std::memory_order_relaxed);
  s.misses = misses.load(std::memory_order_relaxed);
  s.compiles = compiles.load(std::memory_order_relaxed);
  s.waits = waits.load(std::memory_order_relaxed);
  s.damaged = damaged.load(std::memory_order_relaxed);
  s.evictions = evictions.load(std::memory_order_relaxed);
  s.bytes_written = bytes_written.load(std::memory_order_relaxed);
  s.bytes_read = bytes_read.load(std::memory_order_relaxed);
  s.store_failures = store_failures.load(std::memory_order_relaxed);
  return s;
}

}  // namespace kjit::cache
