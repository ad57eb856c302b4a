// Small helpers shared by the benchmarks: a steady clock in microseconds, medians, a table,
// random bytes.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace kjit::bench_util {

// n bytes from a generator seeded with `seed` (a synthetic cubin: never zeros, the same for a seed).
inline std::string random_bytes(std::uint64_t seed, std::size_t n) {
  std::string out(n, '\0');
  std::mt19937_64 rng(seed);
  for (std::size_t j = 0; j + 8 <= out.size(); j += 8) {
    const std::uint64_t v = rng();
    std::memcpy(out.data() + j, &v, 8);
  }
  return out;
}

inline double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

inline void row(const char* what, double kjit, double raw, const char* unit, const char* target) {
  std::printf("%-46s kjit %10.3f %s   raw %10.3f %s   ratio %6.3f   (target %s)\n", what, kjit, unit, raw, unit,
              raw > 0 ? kjit / raw : 0.0, target);
}

}  // namespace kjit::bench_util
