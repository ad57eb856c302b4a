// compile::standard_headers: kernels written for nvcc include the C and C++ standard headers;
// each compiles under NVRTC (sm_90, no GPU needed) in a kernel that uses what it declares, and a
// user header of the same name shadows kjit's.
#include <kjit/tools.hpp>

#include "runtime/compile/standard_headers.hpp"
#include "support/helpers.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

namespace {

// (header, a kernel body that uses it as code written for nvcc would)
const std::vector<std::pair<std::string, std::string>> k_uses = {
    {"cstdio", "printf(\"%d\\n\", n);"},
    {"stdio.h", "printf(\"%d\\n\", n);"},
    {"cstdint", "std::uint32_t a = 1; uint64_t b = a; int8_t c = 2; y[0] = float(b + c);"},
    {"stdint.h", "uint32_t a = 1; intptr_t p = 0; y[0] = float(a + p);"},
    {"cstddef", "std::size_t s = sizeof(float); std::ptrdiff_t d = 1; y[0] = float(s + d);"},
    {"stddef.h", "size_t s = offsetof(float2, y); y[0] = float(s);"},
    {"cstdlib", "y[0] = float(std::abs(-n));"},
    {"stdlib.h", "y[0] = float(abs(-n));"},
    {"cstring", "std::memcpy(y, y + 1, sizeof(float)); memset(y + 2, 0, sizeof(float));"},
    {"string.h", "memcpy(y, y + 1, sizeof(float));"},
    {"climits", "static_assert(INT_MAX == 2147483647); y[0] = float(n < INT_MAX ? CHAR_BIT : 0);"},
    {"limits.h", "y[0] = float(UINT_MAX > 0u);"},
    {"cfloat", "static_assert(FLT_MAX > 3.4e38f); y[0] = FLT_EPSILON + float(DBL_MAX > 1e308);"},
    {"float.h", "y[0] = FLT_MIN;"},
    {"cmath", "y[0] = std::sqrt(y[1]) + fabsf(y[2]) + std::fmax(y[3], 1.0f) + std::exp(0.0f);"},
    {"math.h", "y[0] = sqrtf(y[1]) + fabsf(y[2]);"},
    {"cassert", "assert(n >= 0);"},
    {"assert.h", "assert(n >= 0);"},
    {"type_traits", "static_assert(std::is_same_v<std::remove_cv_t<const int>, int>); y[0] = std::is_integral<int>::value;"},
    {"utility", "auto p = std::make_pair(1, 2.0f); std::swap(p.first, n); y[0] = p.second + float(std::move(n));"},
    {"limits", "static_assert(std::numeric_limits<int>::max() == 2147483647); y[0] = std::numeric_limits<float>::epsilon();"},
    {"tuple", "auto t = std::make_tuple(1, 2.0f); y[0] = std::get<1>(t) + float(std::tuple_size<decltype(t)>::value);"},
    {"array", "std::array<float, 3> a{1, 2, 3}; y[0] = a[2] + float(a.size());"},
    {"functional", "y[0] = std::plus<float>{}(y[1], y[2]);"},
    {"ctime", "clock_t t0 = clock(); std::clock_t t1 = clock(); y[0] = float(t1 - t0) / CLOCKS_PER_SEC;"},
    {"time.h", "clock_t t0 = clock(); time_t t = 0; y[0] = float(clock() - t0 + t);"},
};

// The lecture's GELU (GPU MODE lecture 1), exactly as it is written for torch's load_inline,
// minus the torch wrapper: nvcc gives it M_PI from the host's <math.h>.
const char* k_lecture_gelu = R"(#include <math.h>
__global__ void gelu_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(sqrtf(2.0f / M_PI) * (v + 0.044715f * v * v * v)));
    }
}
)";

kjit::CompileResult compile(kjit::Runtime& rt, kjit::Program p) {
  return rt.compile(p, {.arch = kjit::Arch::sm(90)});
}

}  // namespace

TEST_SUITE("standard_headers") {
  TEST_CASE("every standard header compiles in a kernel that uses it") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    for (const auto& [header, body] : k_uses) {
      INFO("#include <", header, ">");
      std::string src = fmt::format("#include <{}>\nextern \"C\" __global__ void k(float* y, int n) {{ {} }}\n", header, body);
      kjit::CompileResult r;
      CHECK_NOTHROW(r = compile(rt, kjit::Program(header + ".cu", src)));
      CHECK(r.ptx.find(".entry k") != std::string::npos);
    }
    // Every header kjit lists is one that the test uses (and the bridge).
    CHECK(kjit::compile::standard_headers().size() == k_uses.size() + 1);
  }

  TEST_CASE("all of them together, as a kernel written for nvcc includes them") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    std::string src;
    for (const auto& [header, body] : k_uses) src += "#include <" + header + ">\n";
    src += "extern \"C\" __global__ void k(float* y, int n) { y[0] = std::numeric_limits<float>::max() + INT_MAX; }\n";
    CHECK_NOTHROW(compile(rt, kjit::Program("all.cu", src)));
  }

  TEST_CASE("a user header of the same name shadows kjit's: on an include dir and in memory") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    const std::string src = "#include <cstdint>\nextern \"C\" __global__ void k(float* y) { y[0] = USER_CSTDINT; }\n";
    // kjit's <cstdint> does not define USER_CSTDINT: without the user's header this fails.
    CHECK_THROWS_AS(compile(rt, kjit::Program("plain.cu", src)), kjit::CompileError);
    kjit::test::write_file(dir / "inc" / "cstdint", "#pragma once\n#define USER_CSTDINT 42.0f\n");
    auto r = rt.compile(kjit::Program("dir.cu", src), {.arch = kjit::Arch::sm(90), .include_dirs = {dir / "inc"}});
    // 42.0f from the user's header, stored as a float or as its bits.
    CHECK((r.ptx.find("0f42280000") != std::string::npos || r.ptx.find("1109917696") != std::string::npos));
    CHECK_NOTHROW(compile(rt, kjit::Program("mem.cu", src).header("cstdint", "#define USER_CSTDINT 7.0f\n")));
  }

  TEST_CASE("the lecture's GELU compiles as written: <math.h> and M_PI") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    kjit::CompileResult r;
    REQUIRE_NOTHROW(r = rt.compile(kjit::Program("gelu.cu", k_lecture_gelu).instantiate("gelu_kernel"),
                                   {.arch = kjit::Arch::sm(90)}));
    CHECK(r.ptx.find(".entry") != std::string::npos);
    CHECK(r.lowered_name("gelu_kernel").has_value());
    // In double, as the issue's variant writes it, and through <cmath>.
    const std::string dbl = R"(
__global__ void gelu_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        double v = x[i];
        y[i] = 0.5 * v * (1.0 + tanh(sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
    }
}
)";
    for (const char* header : {"math.h", "cmath"}) {
      INFO("#include <", header, "> in double");
      CHECK_NOTHROW(rt.compile(kjit::Program("gelu_double.cu", fmt::format("#include <{}>\n{}", header, dbl)),
                               {.arch = kjit::Arch::sm(90)}));
    }
    CHECK_NOTHROW(rt.compile(kjit::Program("gelu_cmath.cu", std::string("#include <cmath>\n") +
                                                                (std::string(k_lecture_gelu).substr(18))),
                             {.arch = kjit::Arch::sm(90)}));
  }

  TEST_CASE("the C math macros a kernel gets from the host's <math.h> under nvcc") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    for (const char* header : {"math.h", "cmath"}) {
      INFO("#include <", header, ">");
      const std::string src = fmt::format(R"(#include <{}>
static_assert(M_PI > 3.14159 && M_PI < 3.1416 && M_PIf > 3.14159f);
static_assert(M_E > 2.718 && M_SQRT2 * M_SQRT1_2 > 0.999 && M_LN2 < M_LN10 && M_2_SQRTPI > 1.128);
static_assert(M_PI_2 * 2 == M_PI && M_PI_4 * 4 == M_PI && M_1_PI * M_PI > 0.999 && M_LOG2E * M_LN2 > 0.999);
extern "C" __global__ void k(float* y, double* d) {{
  y[0] = INFINITY; y[1] = NAN; y[2] = HUGE_VALF; d[0] = HUGE_VAL; d[1] = M_2_PI + M_LOG10E;
  y[3] = isinf(y[0]) && isnan(y[1]) && y[2] == y[0] ? 1.0f : 0.0f;
}}
)", header);
      CHECK_NOTHROW(rt.compile(kjit::Program("macros.cu", src), {.arch = kjit::Arch::sm(90)}));
    }
  }
}
