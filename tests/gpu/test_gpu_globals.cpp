// Module globals on the GPU: __constant__ coefficients set then used, a __device__ counter read
// back, a variable template through a name expression, asynchronous copies, and the errors.
#include "gpu/gpu_support.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <random>

namespace {

const char* k_source = R"(
__constant__ float coeffs[3];
__device__ unsigned int counter;
template <class T> __device__ T scale_v = T(1);
extern "C" __global__ void poly(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = coeffs[0] + coeffs[1] * x[i] + coeffs[2] * x[i] * x[i];
    atomicAdd(&counter, 1u);
  }
}
extern "C" __global__ void scaled(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = scale_v<float> * x[i];
}
)";

kjit::Module load(kjit::Runtime& rt) {
  return rt.load(kjit::Program("globals.cu", k_source).instantiate("&scale_v<float>"));
}

}  // namespace

TEST_SUITE("globals") {
  TEST_CASE("globals: constant coefficients set then used and a device counter read back") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    auto m = load(rt);
    auto coeffs = m.global<float[]>("coeffs");
    CHECK(coeffs.count() == 3);
    auto c = kjit::test::random_floats(3, 21);
    coeffs.copy_from(c);
    CHECK(coeffs.to_host() == c);
    auto counter = m.global<unsigned int>("counter");
    const unsigned start = std::mt19937(4)() % 100000 + 1;
    counter.copy_from(start);
    const int n = 10007;
    auto host = kjit::test::random_floats(n, 22);
    kjit::DeviceBuffer<float> x{std::span<const float>(host)}, y(n);
    y.fill_bytes(0xFF);
    m.kernel<void(const float*, float*, int)>("poly").launch({.grid = kjit::ceil_div(n, 256), .block = 256},
                                                             x.data(), y.data(), n);
    auto out = y.to_host();
    for (int i = 0; i < n; ++i) {
      const double v = host[i];
      const double want = c[0] + c[1] * v + c[2] * v * v;
      REQUIRE(std::abs(out[i] - want) <= 1e-5 * (1 + std::abs(want)));
    }
    CHECK(counter.to_host() == start + static_cast<unsigned>(n));
    CHECK(counter.bytes() == sizeof(unsigned));
    CHECK(counter.address() != 0);
  }

  TEST_CASE("globals: a variable template through its name expression and asynchronous copies") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    auto m = load(rt);
    auto scale = m.global<float>("scale_v<float>");  // found as "&scale_v<float>"
    CHECK(scale.to_host() == 1.0f);
    kjit::Stream stream;
    const float s = kjit::test::random_floats(1, 23)[0];
    scale.copy_from_async(s, stream.handle());
    const int n = 4099;
    auto host = kjit::test::random_floats(n, 24);
    kjit::DeviceBuffer<float> x{std::span<const float>(host)}, y(n);
    y.fill_bytes(0xFF);
    m.kernel<void(const float*, float*, int)>("scaled").launch(
        {.grid = kjit::ceil_div(n, 128), .block = 128, .stream = stream.handle()}, x.data(), y.data(), n);
    float back = 0;
    scale.to_host_async(back, stream.handle());
    stream.synchronize();
    CHECK(back == s);
    auto out = y.to_host();
    for (int i = 0; i < n; ++i) REQUIRE(out[i] == s * host[i]);
  }

  TEST_CASE("globals: a missing name lists the module's variables and a size mismatch says both sizes") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    auto m = load(rt);
    CHECK_THROWS_WITH_AS(m.global<float>("coefs"), doctest::Contains("coeffs"), kjit::UsageError);
    CHECK_THROWS_WITH_AS(m.global<float>("coefs"), doctest::Contains("counter"), kjit::UsageError);
    CHECK_THROWS_WITH_AS(m.global<double>("counter"), doctest::Contains("4 bytes"), kjit::UsageError);
    CHECK_THROWS_WITH_AS(m.global<double>("counter"), doctest::Contains("8 bytes"), kjit::UsageError);
    CHECK_THROWS_WITH_AS(m.global<double[]>("coeffs"), doctest::Contains("12 bytes"), kjit::UsageError);
    std::array<float, 2> two{1, 2};
    CHECK_THROWS_AS(m.global<float[]>("coeffs").copy_from(two), kjit::UsageError);
    auto names = m.global_names();
    CHECK(std::find(names.begin(), names.end(), "coeffs") != names.end());
    CHECK(std::find(names.begin(), names.end(), "scale_v<float>") != names.end());
  }
}
