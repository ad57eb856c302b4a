#include "core/cache/stats.hpp"

namespace kjit::cache {

StatsSnapshot& StatsSnapshot::operator+=(const StatsSnapshot& o) {
#define KJIT_ADD_COUNTER(name) name += o.name;
  KJIT_CACHE_COUNTERS(KJIT_ADD_COUNTER)
#undef KJIT_ADD_COUNTER
  return *this;
}

StatsSnapshot& StatsSnapshot::operator-=(const StatsSnapshot& o) {
#define KJIT_SUB_COUNTER(name) name = name > o.name ? name - o.name : 0;
  KJIT_CACHE_COUNTERS(KJIT_SUB_COUNTER)
#undef KJIT_SUB_COUNTER
  return *this;
}

StatsSnapshot Stats::snapshot() const {
  StatsSnapshot s;
#define KJIT_LOAD_COUNTER(name) s.name = name.load(std::memory_order_relaxed);
  KJIT_CACHE_COUNTERS(KJIT_LOAD_COUNTER)
#undef KJIT_LOAD_COUNTER
  return s;
}

}  // namespace kjit::cache
