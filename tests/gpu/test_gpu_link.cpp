// Linked programs on the GPU: a two-file -rdc program, the same with LTO, a template kernel of
// a linked result by its name expression, and a device-side launch linked against
// libcudadevrt.a. Random inputs, poisoned outputs.
#include "gpu/gpu_support.hpp"
#include "support/temp_dir.hpp"
#include "support/toolkit.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>
#include <string>

namespace {

kjit::Program caller() {
  return kjit::Program("caller.cu",
                       "extern __device__ float twice(float v);\n"
                       "extern \"C\" __global__ void apply(const float* x, float* y, int n) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i < n) y[i] = twice(x[i]) + 1.0f;\n"
                       "}\n"
                       "template <class T> __global__ void scale(T a, const T* x, T* y, int n) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i < n) y[i] = T(twice(float(a))) * x[i];\n"
                       "}\n")
      .instantiate("scale<float>");
}
kjit::Program callee() { return kjit::Program("callee.cu", "__device__ float twice(float v) { return 2.0f * v; }\n"); }

void check_apply_and_scale(const kjit::Module& m, unsigned seed) {
  const int n = 30011;
  auto host = kjit::test::random_floats(n, seed);
  kjit::DeviceBuffer<float> x{std::span<const float>(host)}, y(n);
  y.fill_bytes(0xFF);  // NaN: an element left unwritten fails the check
  m.kernel<void(const float*, float*, int)>("apply").launch({.grid = kjit::ceil_div(n, 256), .block = 256}, x.data(),
                                                            y.data(), n);
  auto out = y.to_host();
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += !(std::fabs(out[i] - (2.0f * host[i] + 1.0f)) <= 1e-5f * (1 + std::fabs(out[i])));
  CHECK(wrong == 0);

  const float a = 1.0f + static_cast<float>(seed % 7) / 8.0f;
  y.fill_bytes(0xFF);
  m.kernel<void(float, const float*, float*, int)>("scale<float>")
      .launch({.grid = kjit::ceil_div(n, 256), .block = 256}, a, x.data(), y.data(), n);
  out = y.to_host();
  wrong = 0;
  for (int i = 0; i < n; ++i) wrong += !(std::fabs(out[i] - 2.0f * a * host[i]) <= 1e-5f * (1 + std::fabs(out[i])));
  CHECK(wrong == 0);
}

}  // namespace

TEST_SUITE("link") {
  TEST_CASE("link: a two-file -rdc program runs, and again from the cache") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    {
      kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
      kjit::Module m = rt.load(kjit::Link("pair").add(caller()).add(callee()));
      CHECK(m.compile_result().outcome == kjit::Outcome::compiled);
      check_apply_and_scale(m, 31);
    }
    kjit::Runtime fresh(kjit::test::quiet_config(dir.path()));
    kjit::Module m = fresh.load(kjit::Link("pair").add(caller()).add(callee()));
    CHECK(m.compile_result().outcome == kjit::Outcome::hit);
    check_apply_and_scale(m, 32);
  }

  TEST_CASE("link: LTO end to end") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    kjit::Module m = rt.load(kjit::Link("pair-lto").lto().add(caller()).add(callee()));
    check_apply_and_scale(m, 33);
  }

  TEST_CASE("link: a device-side launch linked against libcudadevrt.a") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    kjit::Program parent("parent.cu",
                         "__global__ void child(int* x, int add) { x[blockIdx.x * blockDim.x + threadIdx.x] += add; }\n"
                         "extern \"C\" __global__ void parent(int* x, int blocks, int add) {\n"
                         "  if (threadIdx.x == 0) child<<<blocks, 64>>>(x + blockIdx.x * blocks * 64, add);\n"
                         "}\n");
    kjit::Module m = rt.load(kjit::Link("cdp").add(parent).add_file(kjit::test::toolkit_file("lib64/libcudadevrt.a")));
    const int parents = 3, blocks = 5, n = parents * blocks * 64;
    std::vector<int> host(n);
    std::mt19937 gen(34);
    for (auto& v : host) v = static_cast<int>(gen() % 100000) + 1;
    const int add = static_cast<int>(gen() % 1000) + 7;
    kjit::DeviceBuffer<int> x{std::span<const int>(host)};
    m.kernel<void(int*, int, int)>("parent").launch({.grid = parents, .block = 32}, x.data(), blocks, add);
    auto out = x.to_host();
    int wrong = 0;
    for (int i = 0; i < n; ++i) wrong += out[i] != host[i] + add;
    CHECK(wrong == 0);
  }
}
