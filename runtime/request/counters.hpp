// kjit::request::Counters: the one table of a Runtime's counters (this process), shared by its
// parts: the module registry counts registry hits, the compile service the rest. Each counter is
// listed once, in KJIT_RUNTIME_COUNTERS; RuntimeStats (the public snapshot) has the same fields.
#pragma once

#include <kjit/runtime_config.hpp>

#include <atomic>
#include <cstdint>

namespace kjit::request {

#define KJIT_RUNTIME_COUNTERS(X) X(registry_hits) X(disk_hits) X(misses) X(compiles) X(waits) X(damaged) X(store_failures)

struct Counters {
#define KJIT_DECLARE_COUNTER(name) std::atomic<std::uint64_t> name{0};
  KJIT_RUNTIME_COUNTERS(KJIT_DECLARE_COUNTER)
#undef KJIT_DECLARE_COUNTER

  RuntimeStats snapshot() const {
    RuntimeStats s;
#define KJIT_COPY_COUNTER(name) s.name = name.load(std::memory_order_relaxed);
    KJIT_RUNTIME_COUNTERS(KJIT_COPY_COUNTER)
#undef KJIT_COPY_COUNTER
    return s;
  }
};

}  // namespace kjit::request
