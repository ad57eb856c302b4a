// Kernels written for nvcc on the GPU: device printf from <cstdio> reaches the process's stdout,
// a failed assert from <cassert> is a CudaError that says so, and <cstdint>/<limits>/<cmath>
// behave as under nvcc. printf and assert run in a child process (kjit_stdlib_probe).
#include "gpu/gpu_support.hpp"
#include "support/helpers.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>

namespace {

const std::string k_probe = std::string(KJIT_TEST_TOOLS_DIR) + "/kjit_stdlib_probe";

}  // namespace

TEST_SUITE("standard_headers") {
  TEST_CASE("standard headers: device printf from cstdio reaches stdout of the process") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    std::mt19937 gen(31);
    const int a = static_cast<int>(gen() % 1000) + 1, b = static_cast<int>(gen() % 100) + 1;
    auto r = kjit::test::run_command(k_probe + " " + dir.path().string() + " printf " + std::to_string(a) + " " +
                                     std::to_string(b) + " 2>&1");
    INFO(r.out);
    CHECK(r.code == 0);
    for (int t = 0; t < 4; ++t) {
      CHECK(r.out.find("kjit-printf " + std::to_string(t) + " " + std::to_string(a + t * b) + "\n") != std::string::npos);
    }
    CHECK(r.out.find("done") != std::string::npos);
  }

  TEST_CASE("standard headers: a failed device assert is a CudaError that says so") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    auto r = kjit::test::run_command(k_probe + " " + dir.path().string() + " assert 2>&1");
    INFO(r.out);
    CHECK(r.code == 3);
    CHECK(r.out.find("CUDA_ERROR_ASSERT") != std::string::npos);
    CHECK(r.out.find("n must be negative") != std::string::npos);  // the device's own report
  }

  TEST_CASE("standard headers: cstdint limits and cmath behave as under nvcc") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    auto m = rt.load(kjit::Program("std.cu", R"(
#include <cstdint>
#include <climits>
#include <limits>
#include <cmath>
#include <type_traits>
extern "C" __global__ void k(const float* x, float* y, std::uint32_t* bits, int n) {
  static_assert(std::is_same_v<std::uint32_t, uint32_t>);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = std::sqrt(fabsf(x[i])) + std::numeric_limits<float>::epsilon();
    bits[i] = (std::uint32_t)INT_MAX + (std::uint32_t)i;
  }
})"));
    const int n = 3001;
    auto host = kjit::test::random_floats(n, 41);
    kjit::DeviceBuffer<float> x{std::span<const float>(host)}, y(n);
    kjit::DeviceBuffer<std::uint32_t> bits(n);
    y.fill_bytes(0xFF);
    bits.fill_bytes(0xFF);
    m.kernel<void(const float*, float*, std::uint32_t*, int)>("k").launch(
        {.grid = kjit::ceil_div(n, 256), .block = 256}, x.data(), y.data(), bits.data(), n);
    auto out = y.to_host();
    auto outb = bits.to_host();
    for (int i = 0; i < n; ++i) {
      const float want = std::sqrt(std::fabs(host[i])) + std::numeric_limits<float>::epsilon();
      REQUIRE(std::abs(out[i] - want) <= 1e-6f * want);
      REQUIRE(outb[i] == 2147483647u + static_cast<std::uint32_t>(i));
    }
  }
}
