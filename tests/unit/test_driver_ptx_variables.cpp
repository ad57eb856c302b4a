// driver::ptx_variables on PTX that NVRTC made for sm_90 (no GPU needed): __device__ and
// __constant__ variables, arrays, initialized ones and a variable template are listed, nothing else.
#include <kjit/tools.hpp>

#include "core/driver/ptx_variables.hpp"
#include "support/helpers.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <algorithm>

TEST_SUITE("ptx_variables") {
  TEST_CASE("lists the module-scope device and constant variables of real PTX and no kernel or local") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    const char* src = R"(
__constant__ float coeffs[4];
__device__ unsigned int counter;
__device__ int table[3] = {1, 2, 3};
template <class T> __device__ T scale_v = T(3);
extern "C" __global__ void k(float* y) {
  __shared__ float s[32];
  float local[2] = {y[0], y[1]};
  s[threadIdx.x] = coeffs[threadIdx.x % 4] * local[threadIdx.x % 2] * scale_v<float>;
  atomicAdd(&counter, 1u);
  y[threadIdx.x] = s[threadIdx.x] + table[threadIdx.x % 3];
}
)";
    auto r = rt.compile(kjit::Program("vars.cu", src).instantiate("&scale_v<float>"), {.arch = kjit::Arch::sm(90)});
    auto names = kjit::driver::ptx_variables(r.ptx);
    auto mangled = r.lowered_name("&scale_v<float>");
    REQUIRE(mangled.has_value());
    std::vector<std::string> want = {"coeffs", "counter", "table", *mangled};
    std::sort(want.begin(), want.end());
    CHECK(names == want);
  }

  TEST_CASE("reads linkage prefixes, initializers and arrays and ignores instructions") {
    const char* ptx = ".version 8.0\n.target sm_90\n"
                      ".visible .global .align 4 .u32 a;\n"
                      "\t.global .align 8 .b8 b[16] = {1, 2};\n"
                      ".extern .const .align 4 .f32 c[];\n"
                      ".weak .global .align 4 .f32 d = 0f3F800000;\n"
                      ".visible .entry k(\n.param .u64 p\n)\n{\n\tld.global.f32 %f1, [a];\n\t.shared .f32 s[4];\n}\n";
    CHECK(kjit::driver::ptx_variables(ptx) == std::vector<std::string>{"a", "b", "c", "d"});
    CHECK(kjit::driver::ptx_variables("").empty());
  }
}
