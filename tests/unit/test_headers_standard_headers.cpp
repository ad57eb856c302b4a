// compile::standard_headers: kernels written for nvcc include the C and C++ standard headers;
// each compiles under NVRTC (sm_90, no GPU needed) in a kernel that uses what it declares, and a
// user header of the same name shadows kjit's.
#include <kjit/tools.hpp>

#include "core/compile/nvrtc/nvrtc_info.hpp"
#include "core/compile/headers/standard_headers.hpp"
#include "support/helpers.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
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
    {"algorithm", "y[0] = std::min(y[1], y[2]) + std::max(1.0f, y[3]) + std::clamp(y[4], 0.0f, 1.0f); std::swap(y[5], y[6]);"},
    {"numeric", "y[0] = float(std::gcd(12, n) + std::lcm(4, 6)); y[1] = std::midpoint(y[2], y[3]);"},
    {"complex", "std::complex<float> z(y[1], y[2]); z = std::exp(z) * std::abs(z); y[0] = z.real();"},
    {"ctime", "clock_t t0 = clock(); std::clock_t t1 = clock(); y[0] = float(t1 - t0) / CLOCKS_PER_SEC;"},
    {"time.h", "clock_t t0 = clock(); time_t t = 0; y[0] = float(clock() - t0 + t);"},
    {"iterator", "float* e = std::next(y, 3); y[0] = float(std::distance(y, e)) + *std::prev(e);"},
    {"new", "float* p = new (y + 1) float(2.0f); y[0] = *std::launder(p);"},
    {"initializer_list", "std::initializer_list<int> l = {1, n}; y[0] = float(l.size());"},
    {"cinttypes", "printf(\"%\" PRId64 \" %\" PRIu32 \"\\n\", int64_t(n), uint32_t(n));"},
    {"inttypes.h", "printf(\"%\" PRIx64 \"\\n\", uint64_t(n));"},
};

// Host-only headers: a kernel file includes them for its host code. (header, a prototype that
// names what it declares, device code that uses it: a compile error naming the header, or the
// header `named` where the facility used is declared)
struct HostOnly {
  std::string header, prototype, device_use, named = header;
};
const std::vector<HostOnly> k_host_only = {
    {"iostream", "void print(std::ostream& os);", "std::cout << y[0] << std::endl;"},
    {"ostream", "void print(std::ostream& os, int n);", "std::cerr << n;", "iostream"},
    {"istream", "void read(std::istream& is);", "std::cin >> n;", "iostream"},
    {"fstream", "void save(std::ofstream& f);", "std::ofstream f;"},
    {"sstream", "void format(std::stringstream& s);", "std::ostringstream s;"},
    {"iomanip", "void table(int width);", "std::cout << std::setw(4);"},
    {"vector", "void fill(std::vector<float>& v, const std::vector<int>* w);", "std::vector<float> v;"},
    {"string", "void name(const std::string& s);", "std::string s;"},
    {"string_view", "struct Named { std::string_view name; }; void name(std::string_view s);", "std::string_view s;"},
    {"map", "void count(std::map<int, float>& m);", "std::map<int, float> m;"},
    {"unordered_map", "void index(std::unordered_map<int, int>& m);", "std::unordered_map<int, int> m;"},
    {"set", "void keys(std::set<int>& s);", "std::set<int> s;"},
    {"unordered_set", "void keys(std::unordered_set<int>& s);", "std::unordered_set<int> s;"},
    {"list", "void items(std::list<int>& l);", "std::list<int> l;"},
    {"forward_list", "void items(std::forward_list<int>& l);", "std::forward_list<int> l;"},
    {"deque", "void items(std::deque<int>& d);", "std::deque<int> d;"},
    {"queue", "void work(std::queue<int>& q, std::priority_queue<int>& p);", "std::queue<int> q;"},
    {"stack", "void work(std::stack<int>& s);", "std::stack<int> s;"},
    {"memory", "std::unique_ptr<float[]> host_copy(const float* d, std::shared_ptr<int> p);", "auto p = std::make_unique<float>(1.0f);"},
    {"thread", "void run(std::thread& t);", "std::thread t;"},
    {"mutex", "void guard(std::mutex& m);", "std::mutex m;"},
    {"condition_variable", "void wait(std::condition_variable& c);", "std::condition_variable c;"},
    {"future", "void get(std::future<int>& f);", "std::promise<int> p;"},
    {"random", "void seed(std::mt19937& g);", "std::mt19937 g;"},
    {"chrono", "void elapsed(std::chrono::steady_clock* c);", "std::chrono::steady_clock c;"},
    {"exception", "void fail(const std::exception& e);", "std::exception e;"},
    {"stdexcept", "void fail(const std::runtime_error& e);", "std::runtime_error e;"},
    {"cerrno", "int last_error();", "y[0] = float(errno);"},
    {"sys/time.h", "double seconds(struct timeval t);", "timeval t; gettimeofday(&t, nullptr);"},
    {"functional", "void call(std::function<void(int)>& f);", "std::function<void(int)> f;"},
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

// jitify2's test of its <limits> (BuiltinNumericLimitsHeader), in its shape: a user type, std's
// numeric_limits specialized for it in namespace std (class key, static members unannotated as
// jitify2 writes them: it compiles with -default-device), a template kernel that reads min() and
// max(), instantiated for every arithmetic type and the user's.
const char* k_limits_specialized = R"(#include <limits>
struct Money { long long cents; };
namespace std {
template <> class numeric_limits<Money> {
 public:
  static Money min() { return {-1}; }
  static Money max() { return {1}; }
};
}  // namespace std
template <typename T>
__global__ void extremes(T* out) {
  out[0] = std::numeric_limits<T>::min();
  out[1] = std::numeric_limits<T>::max();
}
)";
const char* k_limits_types[] = {"float", "double", "char", "signed char", "unsigned char", "short", "unsigned short",
                                "int", "unsigned int", "long", "unsigned long", "long long", "unsigned long long",
                                "Money"};

// The driver-API texture sample's kernel file, in its shape: <cuda.h> for CUtexObject, a 2D
// texture read at rotated coordinates; and the types and values a kernel takes from <cuda.h>.
const char* k_driver_texture = R"(#ifndef ROTATE_KERNEL_CU
#define ROTATE_KERNEL_CU
#include <cuda.h>

extern "C" __global__ void rotate(float* out, int width, int height, float angle, CUtexObject image) {
  unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;
  float u = ((float)x - width / 2.0f) * cosf(angle) - ((float)y - height / 2.0f) * sinf(angle);
  float v = ((float)y - height / 2.0f) * cosf(angle) + ((float)x - width / 2.0f) * sinf(angle);
  out[y * width + x] = tex2D<float>(image, u / width + 0.5f, v / height + 0.5f);
}

static_assert(sizeof(CUdeviceptr) == 8 && CUDA_SUCCESS == 0 && CUDA_VERSION >= 12000, "cuda.h's types");
extern "C" __global__ void scatter(CUdeviceptr base, CUresult* status, CUarray_format* format, CUsurfObject s) {
  float* p = reinterpret_cast<float*>(base);
  p[threadIdx.x] = 1.0f;
  status[0] = threadIdx.x ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
  format[0] = CU_AD_FORMAT_FLOAT;
  surf2Dwrite(1.0f, s, 0, 0);
}
#endif
)";

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
    // Every header kjit ships is one that a test here uses: the device ones above, the host-only
    // ones below, kjit's internal ones (__kjit_*) and the few that only forward.
    for (const auto& [name, content] : kjit::compile::standard_header_files()) {
      const std::string n(name);
      const bool known = n.rfind("__kjit_", 0) == 0 ||
                         std::any_of(k_uses.begin(), k_uses.end(), [&](const auto& u) { return u.first == n; }) ||
                         std::any_of(k_host_only.begin(), k_host_only.end(), [&](const auto& h) { return h.header == n; }) ||
                         n == "new" || n == "initializer_list" || n == "iterator" || n == "cinttypes" || n == "inttypes.h" ||
                         n == "errno.h" || n == "unistd.h";
      CHECK_MESSAGE(known, n);
    }
  }

  TEST_CASE("all of them together, as a kernel written for nvcc includes them") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    std::string src;
    for (const auto& [header, body] : k_uses) src += "#include <" + header + ">\n";
    src += "extern \"C\" __global__ void k(float* y, int n) { y[0] = std::numeric_limits<float>::max() + INT_MAX; }\n";
    CHECK_NOTHROW(compile(rt, kjit::Program("all.cu", src)));
  }

  // #56: <utility> and <cuda/std/utility> together failed ("declaration is incompatible with
  // template parameter _Tp": a non-variadic tuple_size), and <ctime>'s time_t was long where
  // libcu++'s is long long. Every kjit header with a libcu++ counterpart, with it, in both orders.
  TEST_CASE("every kjit standard header together with its libcu++ counterpart in both orders") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    std::vector<std::string> pairs;
    for (const auto& [name, content] : kjit::compile::standard_header_files()) {
      const std::string n(name);
      for (const auto& folder : kjit::compile::NvrtcInfo::toolkit_include_dirs()) {
        if (n.find('.') == std::string::npos && n.rfind("__kjit_", 0) != 0 &&
            std::filesystem::is_regular_file(folder / "cuda/std" / n)) {
          pairs.push_back(n);
          break;
        }
      }
    }
    REQUIRE(pairs.size() >= 15);  // cstdint, utility, tuple, ctime, type_traits, limits, ...
    const std::string kernel =
        "static_assert(std::is_same<time_t, cuda::std::time_t>::value, \"one time_t\");\n"
        "static_assert(std::is_same<int64_t, cuda::std::int64_t>::value, \"one int64_t\");\n"
        "extern \"C\" __global__ void k(float* y) { y[0] = float(cuda::std::tuple_size<cuda::std::tuple<int, float>>::value); }\n";
    std::string kjit_first, libcudacxx_first;
    for (const auto& h : pairs) {
      kjit_first += fmt::format("#include <{}>\n#include <cuda/std/{}>\n", h, h);
      libcudacxx_first += fmt::format("#include <cuda/std/{}>\n#include <{}>\n", h, h);
    }
    for (const auto& src : {kjit_first, libcudacxx_first}) {
      INFO(src);
      kjit::CompileResult r;
      CHECK_NOTHROW(r = compile(rt, kjit::Program("both.cu", "#include <type_traits>\n" + src + kernel)));
      CHECK(r.log.find("warning") == std::string::npos);
    }
  }

  // #56: int64_t was long long under kjit, so a kernel taking an int64_t* had 'x' in its name where
  // nvcc's has 'l'; a host program looking the kernel up by nvcc's name did not find it.
  TEST_CASE("int64_t uint64_t size_t and ptrdiff_t are named as nvcc names them on LP64 with or without libcu++") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    const std::string kernel = "__global__ void k(int64_t* a, uint64_t b, size_t c, ptrdiff_t d, intptr_t e, std::int64_t f) {}\n";
    for (const std::string includes : {"#include <cstdint>\n#include <cstddef>\n", "#include <stdint.h>\n#include <cstddef>\n",
                                       "#include <cuda/std/cstdint>\n#include <cstdint>\n#include <cstddef>\n",
                                       "#include <cub/warp/warp_reduce.cuh>\n#include <cstdint>\n#include <cstddef>\n",
                                       "#include <cstdint>\n#include <cooperative_groups.h>\n#include <cuda/std/cstddef>\n"}) {
      INFO(includes);
      kjit::CompileResult r;
      REQUIRE_NOTHROW(r = compile(rt, kjit::Program("names.cu", includes + kernel)));
      // nvcc -cubin on x86-64 Linux: long (l), unsigned long (m).
      CHECK(r.ptx.find(".entry _Z1kPlmmlll(") != std::string::npos);
    }
  }

  // #57 item 17: CuPy's <cupy/complex.cuh> (math_private.h) defines FLT_MIN, FLT_MAX and
  // FLT_EPSILON as libcu++'s <cuda/std/cfloat> spells them; kjit's pre-included macros spelled
  // them with `F`, a redefinition NVRTC warns of (#47-D), an error under --diag-error=47.
  TEST_CASE("a header that defines the float.h macros as libcu++ and CuPy do redefines nothing") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    const std::string cupy_like =
        "#pragma once\n"
        "#  define FLT_MIN         1.17549435082228750796873653722224568e-38f\n"
        "#  define FLT_MAX         3.40282346638528859811704183484516925e+38f\n"
        "#  define FLT_EPSILON     1.19209289550781250000000000000000000e-7f\n"
        "#  define FLT_TRUE_MIN    1.40129846432481707092372958328991613e-45f\n"
        "#  define FLT_MAX_EXP     128\n"
        "#  define FLT_MANT_DIG    24\n"
        "#  define DBL_MIN         2.22507385850720138309023271733240406e-308\n"
        "#  define DBL_MAX         1.79769313486231570814527423731704357e+308\n"
        "#  define DBL_EPSILON     2.22044604925031308084726333618164062e-16\n"
        "#  define DBL_MAX_EXP     1024\n"
        "#  define DBL_MANT_DIG    53\n";
    // The header first or <cfloat> first (kjit's is pre-included either way), as a warning made an error.
    for (const std::string& order : {std::string("#include \"math_private.h\"\n#include <cfloat>\n"),
                                     std::string("#include <cfloat>\n#include \"math_private.h\"\n")}) {
      CAPTURE(order);
      const std::string src = order + "extern \"C\" __global__ void k(float* y) { y[0] = FLT_MIN + FLT_MAX * FLT_EPSILON; }\n";
      kjit::CompileResult r;
      REQUIRE_NOTHROW(r = rt.compile(kjit::Program("cupy_like.cu", src).header("math_private.h", cupy_like),
                                     {.arch = kjit::Arch::sm(90), .flags = {"--diag-error=47"}}));
      CHECK(r.log.find("incompatible redefinition") == std::string::npos);
      CHECK(r.ptx.find(".entry k") != std::string::npos);
    }
    // The other spelling (`F`, as kjit's were) is a redefinition NVRTC reports: the test can fail.
    const std::string other = "#define FLT_MIN 1.17549435082228750796873653722224568e-38F\n"
                              "extern \"C\" __global__ void k(float* y) { y[0] = FLT_MIN; }\n";
    CHECK_THROWS_AS(rt.compile(kjit::Program("other.cu", other), {.arch = kjit::Arch::sm(90), .flags = {"--diag-error=47"}}),
                    kjit::CompileError);
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

  // #34 item 18: kjit's std was only a using-directive onto cuda::std, which cannot be specialized through.
  TEST_CASE("std::numeric_limits specialized for a user type in namespace std as jitify2's test does") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    kjit::Program p("limits_specialized.cu", k_limits_specialized);
    for (const char* type : k_limits_types) p.instantiate(fmt::format("extremes<{}>", type));
    kjit::CompileResult r;
    REQUIRE_NOTHROW(r = rt.compile(p, {.arch = kjit::Arch::sm(90), .flags = {"-default-device"}}));
    for (const char* type : k_limits_types) {
      INFO(type);
      CHECK(r.lowered_name(fmt::format("extremes<{}>", type)).has_value());
    }
    // Money's max() is its own: 1, stored as the 64-bit cents.
    CHECK(r.ptx.find("st.global.u64") != std::string::npos);
  }

  TEST_CASE("numeric_limits of namespace std: specialized as under nvcc and std's own still work") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    // libcu++'s own header beside kjit's: both in one program, each in its namespace.
    const std::string src = R"(#include <limits>
#include <cstdint>
#include <cuda/std/limits>
struct Fixed { int raw; };
namespace std {
template <> struct numeric_limits<Fixed> {
  static constexpr bool is_specialized = true;
  __host__ __device__ static constexpr Fixed max() { return {0x7fffffff}; }
  __host__ __device__ static constexpr Fixed lowest() { return {-0x7fffffff - 1}; }
};
}  // namespace std
static_assert(std::numeric_limits<Fixed>::is_specialized && std::numeric_limits<Fixed>::max().raw == 0x7fffffff);
static_assert(std::numeric_limits<const Fixed>::max().raw == 0x7fffffff);  // cv: the type's own
static_assert(!std::numeric_limits<int*>::is_specialized);
static_assert(std::numeric_limits<float>::max() > 3.4e38f && std::numeric_limits<const volatile int>::max() == 2147483647);
static_assert(std::numeric_limits<std::uint8_t>::digits == 8 && std::numeric_limits<double>::is_iec559);
static_assert(::cuda::std::numeric_limits<int>::max() == 2147483647);
extern "C" __global__ void k(float* y, Fixed* f) {
  y[0] = std::numeric_limits<float>::infinity() + std::numeric_limits<float>::lowest();
  f[0] = std::numeric_limits<Fixed>::lowest();
}
)";
    CHECK_NOTHROW(compile(rt, kjit::Program("specialized.cu", src)));
  }

  TEST_CASE("a kernel file that includes <cuda.h>: the driver-API texture sample's shape") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    kjit::CompileResult r;
    REQUIRE_NOTHROW(r = compile(rt, kjit::Program("rotate_kernel.cu", k_driver_texture)));
    CHECK(r.ptx.find(".entry rotate") != std::string::npos);
    CHECK(r.ptx.find("tex.2d") != std::string::npos);
    CHECK(r.ptx.find(".entry scatter") != std::string::npos);
    // With the toolkit's folder named, as a kernel built with nvcc -I$CUDA_HOME/include has it, and
    // with the macros that switch cuda.h's declarations (per-thread stream, deprecated calls).
    std::vector<std::string> flags;
    for (const auto& toolkit : kjit::compile::NvrtcInfo::toolkit_include_dirs()) flags.push_back("-I" + toolkit.string());
    flags.push_back("-DCUDA_API_PER_THREAD_DEFAULT_STREAM=1");
    flags.push_back("-DCUDA_ENABLE_DEPRECATED");
    CHECK_NOTHROW(rt.compile(kjit::Program("rotate_kernel.cu", k_driver_texture), {.arch = kjit::Arch::sm(90), .flags = flags}));
    // A user's own cuda.h still wins.
    CHECK_THROWS_AS(compile(rt, kjit::Program("mine.cu", k_driver_texture).header("cuda.h", "#define MINE 1\n")),
                    kjit::CompileError);
  }

  TEST_CASE("a kernel file that includes <cuda_runtime_api.h> or <cuda_runtime.h> for the runtime's types") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    for (const char* header : {"cuda_runtime_api.h", "cuda_runtime.h"}) {
      INFO(header);
      const std::string src = fmt::format(R"(#include <{}>
static_assert(cudaSuccess == 0 && sizeof(cudaTextureObject_t) == 8);
extern "C" __global__ void k(cudaTextureObject_t t, float* y, cudaError_t* e, cudaChannelFormatKind* kind) {{
  y[threadIdx.x] = tex1Dfetch<float>(t, threadIdx.x);
  e[0] = threadIdx.x ? cudaErrorInvalidValue : cudaSuccess;
  kind[0] = cudaChannelFormatKindFloat;
  dim3 b = blockDim;
  y[0] += float(b.x);
}}
)", header);
      CHECK_NOTHROW(compile(rt, kjit::Program("runtime_types.cu", src)));
      // Relocatable device code: the header also declares the device runtime's calls.
      CHECK_NOTHROW(rt.compile(kjit::Program("runtime_rdc.cu", src), {.arch = kjit::Arch::sm(90), .flags = {"-rdc=true"}}));
    }
  }

  TEST_CASE("the headers users reach for most that NVRTC can compile: docs/headers.md's probe") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    const std::vector<std::pair<std::string, std::string>> probes = {
        {"algorithm", R"(#include <algorithm>
extern "C" __global__ void k(float* y, int* v) {
  y[0] = std::min({y[1], y[2], y[3]}) + std::max(y[4], 0.0f) + std::clamp(y[5], -1.0f, 1.0f);
  auto mm = std::minmax(v[0], v[1]);
  v[2] = mm.second - mm.first + int(std::count(v, v + 8, 0)) + int(std::find(v, v + 8, 3) - v);
  std::make_heap(v, v + 8);
  std::sort_heap(v, v + 8);
  std::reverse(v, v + 8);
  v[9] = int(std::lower_bound(v, v + 8, 4) - v);
}
)"},
        {"cub/block/block_reduce.cuh", R"(#include <cub/block/block_reduce.cuh>
#include <cub/warp/warp_reduce.cuh>
extern "C" __global__ void k(const float* x, float* y) {
  using Block = cub::BlockReduce<float, 128>;
  __shared__ typename Block::TempStorage block;
  using Warp = cub::WarpReduce<float>;
  __shared__ typename Warp::TempStorage warp[4];
  float s = Block(block).Sum(x[threadIdx.x]);
  float w = Warp(warp[threadIdx.x / 32]).Reduce(x[threadIdx.x], cuda::maximum<>{});
  if (threadIdx.x == 0) y[blockIdx.x] = s + w;
}
)"},
        {"cooperative_groups.h", R"(#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
extern "C" __global__ void k(float* y) {
  auto block = cg::this_thread_block();
  auto tile = cg::tiled_partition<32>(block);
  y[threadIdx.x] = cg::reduce(tile, y[threadIdx.x], cg::plus<float>());
  block.sync();
}
)"},
        {"cuda_fp16.h", R"(#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void k(__half* h, __nv_bfloat16* b) { h[0] = __hadd(h[1], h[2]); b[0] = __float2bfloat16(b[1] * b[2]); }
)"},
        {"thrust/tuple.h", R"(#include <thrust/tuple.h>
#include <thrust/pair.h>
extern "C" __global__ void k(float* y) {
  auto t = thrust::make_tuple(1.0f, 2);
  auto p = thrust::make_pair(3, 4.0f);
  y[0] = thrust::get<0>(t) + p.second;
}
)"},
        {"cuda/std/complex", R"(#include <cuda/std/complex>
extern "C" __global__ void k(cuda::std::complex<float>* z) { z[0] = cuda::std::exp(z[1]) * cuda::std::abs(z[2]); }
)"},
    };
    for (const auto& [header, src] : probes) {
      INFO("#include <", header, ">");
      kjit::CompileResult r;
      CHECK_NOTHROW(r = compile(rt, kjit::Program("probe.cu", src)));
      CHECK(r.ptx.find(".entry k") != std::string::npos);
    }
  }

  TEST_CASE("a host-only header compiles for its host code and fails in device code naming itself") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    for (const auto& h : k_host_only) {
      INFO("#include <", h.header, ">");
      const std::string host = fmt::format("#include <{}>\n{}\nextern \"C\" __global__ void k(float* y, int n) {{ y[0] = n; }}\n",
                                           h.header, h.prototype);
      kjit::CompileResult r;
      CHECK_NOTHROW(r = compile(rt, kjit::Program("host_only.cu", host)));
      CHECK(r.ptx.find(".entry k") != std::string::npos);
      const std::string device = fmt::format("#include <{}>\nextern \"C\" __global__ void k(float* y, int n) {{ {} }}\n",
                                             h.header, h.device_use);
      try {
        compile(rt, kjit::Program("device_use.cu", device));
        FAIL("compiled: ", h.device_use);
      } catch (const kjit::CompileError& e) {
        const std::string what = std::string(e.what()) + e.log();
        CHECK_MESSAGE(what.find("host-only under NVRTC") != std::string::npos, what);
        CHECK_MESSAGE(what.find("<" + h.named + ">") != std::string::npos, what);
      }
    }
  }

  TEST_CASE("where device code has the facility, the header gives it: function objects, assert, memcpy") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    const std::string src = R"(#include <functional>
#include <cassert>
#include <cstring>
#include <vector>
#include <iostream>
extern "C" __global__ void k(float* y, int n) {
  assert(n > 0);
  std::memcpy(y, y + 1, sizeof(float));
  y[2] = std::multiplies<>{}(y[3], 2.0f) + std::plus<float>{}(y[4], y[5]) + std::invoke(std::negate<float>{}, y[6]);
  y[7] = std::greater<int>{}(n, 3) ? std::strlen("four") : 0;
}
)";
    kjit::CompileResult r;
    CHECK_NOTHROW(r = compile(rt, kjit::Program("device_facilities.cu", src)));
    CHECK(r.ptx.find("__assertfail") != std::string::npos);
  }

  TEST_CASE("nvcc's implicit environment: math, its std forms, the macros and uint without an include") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    const std::string src = R"(extern "C" __global__ void k(float* y, double* d, int n, long l) {
  uint u = n; ushort s = 2; ulong w = 3; u_char c = 4;
  y[0] = M_PI + M_SQRT2 + M_PIf + INFINITY + NAN + HUGE_VALF + FLT_MAX + FLT_EPSILON + DBL_MIN + u + s + w + c;
  y[1] = std::sqrt(y[2]) + std::exp(y[3]) + std::fabs(y[4]) + std::tanh(y[5]) + std::pow(y[6], 2.0f) + std::floor(y[7]);
  d[0] = std::sqrt(d[1]) + std::log1p(d[2]) + std::erf(d[3]) + std::abs(d[4]) + std::abs(l) + std::abs(n) + HUGE_VAL;
  y[8] = std::isnan(y[9]) + std::isinf(y[10]) + std::isfinite(y[11]) + std::signbit(y[12]) + std::isnormal(y[13]) +
         (std::fpclassify(y[14]) == FP_ZERO) + std::isgreater(y[15], y[16]) + std::min(y[17], y[18]) + std::max(n, 3);
}
)";
    kjit::CompileResult r;
    CHECK_NOTHROW(r = compile(rt, kjit::Program("implicit.cu", src)));
    CHECK(r.ptx.find(".entry k") != std::string::npos);
    // Turned off: a bare NVRTC environment, where none of it is defined.
    for (const kjit::CompileOptions& bare : {kjit::CompileOptions{.arch = kjit::Arch::sm(90), .nvcc_environment = false},
                                              kjit::CompileOptions{.arch = kjit::Arch::sm(90), .flags = {"--no-nvcc-environment"}}}) {
      try {
        rt.compile(kjit::Program("bare.cu", src), bare);
        FAIL("compiled without the nvcc environment");
      } catch (const kjit::CompileError& e) {
        CHECK_MESSAGE(e.log().find("identifier \"M_PI\" is undefined") != std::string::npos, e.log());
        CHECK_MESSAGE(e.log().find("identifier \"uint\" is undefined") != std::string::npos, e.log());
      }
    }
    // The two spellings of "off" are one key; on and off are two.
    auto key_of = [](const kjit::CompileOptions& o) { return kjit::canonical_flags(o, kjit::Arch::sm(90)); };
    CHECK(key_of({.nvcc_environment = false}) == key_of({.flags = {"--no-nvcc-environment"}}));
    CHECK(key_of({}) != key_of({.nvcc_environment = false}));
  }

  TEST_CASE("a kernel that includes a standard header and uses nothing of it: the same PTX, no module global") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    // The lecture's GELU without M_PI (whose value comes from the environment either way).
    const std::string gelu = R"(__global__ void gelu_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
    }
}
)";
    auto body = [](const std::string& ptx) { return ptx.substr(ptx.find(".visible .entry")); };
    auto globals = [](const std::string& ptx) {
      std::size_t n = 0;
      for (const std::string kind : {"\n.global ", "\n.const ", "\n.visible .global ", "\n.visible .const "}) {
        for (std::size_t p = ptx.find(kind); p != std::string::npos; p = ptx.find(kind, p + 1)) ++n;
      }
      return n;
    };
    const kjit::CompileResult plain = compile(rt, kjit::Program("gelu.cu", gelu));
    const kjit::CompileResult bare = rt.compile(kjit::Program("gelu.cu", gelu), {.arch = kjit::Arch::sm(90), .nvcc_environment = false});
    CHECK(body(plain.ptx) == body(bare.ptx));  // the environment changes nothing a kernel does not use
    CHECK(globals(plain.ptx) == 0);
    for (const char* header : {"math.h", "cmath", "algorithm", "limits", "type_traits", "cstdint", "cfloat", "complex",
                               "utility", "tuple", "array", "functional", "numeric", "cstdlib", "cstring", "iostream", "vector"}) {
      INFO("#include <", header, ">");
      const kjit::CompileResult with = compile(rt, kjit::Program("gelu.cu", fmt::format("#include <{}>\n{}", header, gelu)));
      CHECK(body(with.ptx) == body(plain.ptx));
      CHECK(globals(with.ptx) == (std::string(header) == "tuple" ? 1u : 0u));  // std::ignore is an object
      CHECK(with.cubin.size() <= plain.cubin.size() * 12 / 10);
    }
  }

  TEST_CASE("type traits and numeric_limits in use add no module global") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    const std::string src = R"(#include <type_traits>
#include <limits>
template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
__device__ T lowest_or(T x) { return std::is_same<T, float>::value ? std::numeric_limits<T>::lowest() : x; }
extern "C" __global__ void k(float* y, int* z) {
  y[0] = lowest_or(y[1]) + std::numeric_limits<float>::digits + std::numeric_limits<double>::max_exponent;
  z[0] = std::numeric_limits<int>::max() - std::numeric_limits<unsigned char>::digits + std::is_signed<int>::value;
  static_assert(std::numeric_limits<int>::is_signed && !std::numeric_limits<unsigned>::is_signed);
  static_assert(std::conditional_t<std::numeric_limits<char>::is_signed, std::true_type, std::false_type>::value);
}
)";
    const kjit::CompileResult r = compile(rt, kjit::Program("traits.cu", src));
    // None but the byte kjit adds to ask NVRTC for the extern "C" kernel's type (compile::KernelTypes).
    std::string globals;
    for (std::size_t at = r.ptx.find("\n.global "); at != std::string::npos; at = r.ptx.find("\n.global ", at + 1)) {
      const std::string line = r.ptx.substr(at + 1, r.ptx.find('\n', at + 1) - at - 1);
      if (line.find("__kjit_kernel_type") == std::string::npos) globals += line + "\n";
    }
    CHECK_MESSAGE(globals.empty(), r.ptx);
  }
}
