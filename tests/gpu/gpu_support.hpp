// Shared by the GPU tests: skip (KJIT_SKIP: ctest counts it skipped) when there is no device,
// random inputs that are never zero, a relative-error check against a double reference.
#pragma once

#include <kjit/kjit.hpp>

#include "support/helpers.hpp"
#include "support/skip.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#define KJIT_REQUIRE_GPU()                                                                          \
  do {                                                                                              \
    if (kjit::device_count() == 0) {                                                                \
      KJIT_SKIP("no CUDA device: " << (kjit::driver_available() ? "the driver reports 0 devices"    \
                                                                 : kjit::driver_unavailable_reason())); \
    }                                                                                               \
  } while (0)

namespace kjit::test {

inline std::vector<float> random_floats(std::size_t n, unsigned seed, float lo = 0.5f, float hi = 2.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = dist(gen);
    if (gen() & 1) x = -x;  // both signs, never zero
  }
  return v;
}

}  // namespace kjit::test
