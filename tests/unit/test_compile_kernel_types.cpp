// compile::KernelTypes and KernelSignature::of: an extern "C" kernel's parameter types are what
// NVRTC compiled (the lowered name of its type query), never the text's guess: a precision switch
// under #ifdef, typedefs in other scopes, a macro redefining `float`, aliases, a quote in a
// character literal or a raw string before the kernel. Without a GPU, from a CompileResult and from
// a cache hit in another Runtime. The query adds one hidden symbol and changes no kernel's code
// (raw NVRTC with and without it). NVRTC, sm_90, no GPU needed.
#include <kjit/kjit.hpp>
#include <kjit/parameters.hpp>
#include <kjit/tools/inspect.hpp>

#include "core/compile/kernel_types.hpp"
#include "core/compile/source/kernel_declarations.hpp"
#include "core/driver/ptx_variables.hpp"
#include "support/helpers.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nvrtc.h>

#include <string>
#include <vector>

namespace {

using E = kjit::ElementType;

kjit::CompileResult compiled(kjit::Runtime& rt, const std::string& source, std::vector<std::string> defines = {},
                             std::vector<std::string> flags = {}) {
  return rt.compile(kjit::Program("types.cu", source),
                    {.arch = kjit::Arch::sm(90), .defines = std::move(defines), .flags = std::move(flags)});
}

std::vector<E> elements(const kjit::KernelSignature& s) {
  std::vector<E> out;
  for (const auto& p : s.parameters()) out.push_back(p.element);
  return out;
}

// PTX from raw NVRTC, with or without kjit's query appended: the kernels' code must not change.
std::string raw_ptx(const std::string& source, const std::vector<kjit::compile::KernelTypeQuery>& queries) {
  const std::string text = queries.empty() ? source : source + std::string(kjit::compile::KernelTypes::declaration());
  nvrtcProgram prog = nullptr;
  REQUIRE(nvrtcCreateProgram(&prog, text.c_str(), "raw.cu", 0, nullptr, nullptr) == NVRTC_SUCCESS);
  for (const auto& q : queries) REQUIRE(nvrtcAddNameExpression(prog, q.expression.c_str()) == NVRTC_SUCCESS);
  const char* options[] = {"-arch=sm_90", "-std=c++17"};
  const nvrtcResult r = nvrtcCompileProgram(prog, 2, options);
  std::size_t size = 0;
  nvrtcGetPTXSize(prog, &size);
  std::string ptx(size, '\0');
  if (r == NVRTC_SUCCESS) nvrtcGetPTX(prog, ptx.data());
  nvrtcDestroyProgram(&prog);
  REQUIRE(r == NVRTC_SUCCESS);
  return ptx;
}

// The PTX less the line that declares kjit's variable.
std::string without_added_symbol(const std::string& ptx) {
  std::string out;
  std::size_t pos = 0;
  while (pos < ptx.size()) {
    std::size_t end = ptx.find('\n', pos);
    end = end == std::string::npos ? ptx.size() : end + 1;
    const std::string_view line(ptx.data() + pos, end - pos);
    if (line.find(kjit::compile::k_kernel_type_variable) == std::string_view::npos) out.append(line);
    pos = end;
  }
  return out;
}

const char* const k_precision = R"(
#ifdef USE_DOUBLE
typedef double real_t;
#else
typedef float real_t;
#endif
extern "C" __global__ void axpy(const real_t* x, real_t* y, real_t a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}
)";

}  // namespace

TEST_SUITE("compile::KernelTypes") {
  TEST_CASE("the precision switch reads as it compiled: float without -D, double with it") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    auto f = kjit::KernelSignature::of(compiled(rt, k_precision), "axpy");
    CHECK(elements(f) == std::vector<E>{E::float32, E::float32, E::unchecked, E::unchecked});
    CHECK(f.parameters()[0].read_only);
    CHECK_FALSE(f.parameters()[1].read_only);
    CHECK(f.parameters()[0].kind == kjit::ParameterKind::pointer);
    CHECK(f.parameters()[3].kind == kjit::ParameterKind::signed_integer);
    auto d = kjit::KernelSignature::of(compiled(rt, k_precision, {"USE_DOUBLE"}), "axpy");
    CHECK(elements(d) == std::vector<E>{E::float64, E::float64, E::unchecked, E::unchecked});
    CHECK_NOTHROW(f.check_element(0, E::float32, 4, "torch.float32 tensor"));
    CHECK_THROWS_AS(f.check_element(0, E::float64, 4, "torch.float64 tensor"), kjit::ArgumentError);
  }

  TEST_CASE("every shape of the issue gives the compiled type") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    struct Case {
      std::string source;
      std::vector<E> expected;
    };
    const std::vector<Case> cases = {
        {"#if 0\ntypedef double real_t;\n#else\ntypedef float real_t;\n#endif\n"
         "extern \"C\" __global__ void k(real_t* x) { x[0] = 1; }", {E::float32}},
        {"namespace a { typedef double real_t; }\nstruct S { typedef double real_t; };\ntypedef float real_t;\n"
         "extern \"C\" __global__ void k(real_t* x, a::real_t* y, S::real_t* z) { x[0] = 1; }",
         {E::float32, E::float64, E::float64}},
        {"typedef unsigned short half;\nextern \"C\" __global__ void k(half* x) { x[0] = 1; }", {E::uint16}},
        {"#define float double\nextern \"C\" __global__ void k(float* x) { x[0] = 1; }", {E::float64}},
        {"__device__ char q() { return '\"'; }\nextern \"C\" __global__ void k(double* x, int* y) { x[0] = q(); }",
         {E::float64, E::int32}},
        {"__device__ const char* r() { return R\"(extern \"C\" __global__ void k(char* x) {})\"; }\n"
         "extern \"C\" __global__ void k(float* x) { x[0] = r()[0]; }", {E::float32}},
        {"__device__ const char s[] = \"extern \\\"C\\\" __global__ void k(char* x);\";\n"
         "extern \"C\" __global__ void k(unsigned long long* x) { x[0] = s[0]; }", {E::uint64}},
        {"template <class T> using ptr = T*;\nextern \"C\" __global__ void k(ptr<const double> x, float* y) { y[0] = x[0]; }",
         {E::float64, E::float32}},
        {"#define REAL float\nextern \"C\" __global__ void k(REAL* x) { x[0] = 1; }", {E::float32}},
        {"#define KERNEL extern \"C\" __global__\nKERNEL void k(short* x) { x[0] = 1; }", {E::int16}},
        {"extern \"C\" {\nnamespace ops { __global__ void k(__nv_fp8_e4m3* a, __nv_fp8_e5m2* b, bool* c) {} }\n}",
         {E::float8_e4m3, E::float8_e5m2, E::boolean}},
    };
    int n = 0;
    for (const auto& c : cases) {
      INFO(c.source);
      std::string source = c.source;
      if (source.find("fp8") != std::string::npos) source = "#include <cuda_fp8.h>\n" + source;
      const kjit::CompileResult r = compiled(rt, source + fmt::format("\n// case {}\n", n++));
      const auto s = kjit::KernelSignature::of(r, "k");
      CHECK(elements(s) == c.expected);
      for (const auto& p : s.parameters()) CHECK(p.element_note.empty());
    }
  }

  TEST_CASE("a kernel NVRTC was not asked about is unchecked and its signature says why") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    // A function-like macro makes the kernel: the lexer sees no declaration to ask about.
    const auto r = compiled(rt, "#define KERNEL(name, T) extern \"C\" __global__ void name(T* x) { x[0] = 1; }\n"
                                "KERNEL(k, double)\n");
    const auto s = kjit::KernelSignature::of(r, "k");
    CHECK(s.parameters()[0].element == E::unchecked);
    CHECK(s.parameters()[0].kind == kjit::ParameterKind::pointer_or_integer);
    CHECK(s.to_string().find("NVRTC was not asked its type") != std::string::npos);
    // Below C++14 there is no variable template to ask with: the compile still succeeds.
    const auto old = compiled(rt, "extern \"C\" __global__ void k(float* x) { x[0] = 1; }", {}, {"-std=c++11"});
    CHECK(old.kernel_types.empty());
    CHECK(kjit::KernelSignature::of(old, "k").parameters()[0].element == E::unchecked);
  }

  TEST_CASE("the types travel in the cache entry: a hit in a fresh Runtime knows them") {
    kjit::test::TempDir dir;
    {
      kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
      CHECK(compiled(rt, k_precision).outcome == kjit::Outcome::compiled);
    }
    kjit::Runtime again(kjit::test::quiet_config(dir / "cache"));
    const auto hit = compiled(again, k_precision);
    CHECK(hit.outcome == kjit::Outcome::hit);
    REQUIRE(hit.kernel_types.size() == 1);
    CHECK(elements(kjit::KernelSignature::of(hit, "axpy"))[0] == E::float32);
  }

  TEST_CASE("the query changes no kernel's code and its one symbol is hidden from kjit's views") {
    const std::vector<std::string> sources = {
        k_precision,
        "extern \"C\" __global__ void a(const float* x, float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = x[i]; }\n"
        "extern \"C\" __global__ void b(double* x) { x[threadIdx.x] *= 2.0; }\n"
        "__global__ void c(int* x) { x[0] = 3; }\n",
        "namespace ops { extern \"C\" __global__ void relu(float* x, unsigned n) { if (threadIdx.x < n) x[threadIdx.x] = "
        "fmaxf(x[threadIdx.x], 0.f); } }\n",
    };
    for (const auto& source : sources) {
      INFO(source);
      const auto queries = kjit::compile::KernelTypes::queries(source, {});
      REQUIRE_FALSE(queries.empty());
      const std::string with = raw_ptx(source, queries);
      CHECK(with.find(kjit::compile::k_kernel_type_variable) != std::string::npos);
      CHECK(without_added_symbol(with) == raw_ptx(source, {}));
    }
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    const auto r = compiled(rt, sources[1]);
    CHECK(r.ptx.find(kjit::compile::k_kernel_type_variable) != std::string::npos);
    CHECK(kjit::inspect::normalize(r.ptx).find("__kjit") == std::string::npos);
    CHECK(kjit::inspect::function_ptx(r.ptx, "a").find("__kjit") == std::string::npos);
    for (const auto& v : kjit::driver::ptx_variables(r.ptx)) CHECK(v.find("__kjit") == std::string::npos);
  }

  TEST_CASE("parameter names come from the declaration, in linear time, whatever precedes it") {
    std::string source;
    for (int k = 0; k < 500000; ++k) source += "k(";
    source += "\n;\n__global__ void k(const float* matrix, float* out, int n) {}\n";
    const auto found = kjit::compile::KernelDeclarations(source).parameters("k", 3);
    REQUIRE(found.has_value());
    CHECK((*found)[0].name == "matrix");
    CHECK((*found)[2].name == "n");
    const auto quoted = kjit::compile::KernelDeclarations(
        "__device__ char q() { return '\"'; }\n__global__ void k(float* data, int count) {}\n").parameters("k", 2);
    REQUIRE(quoted.has_value());
    CHECK((*quoted)[1].name == "count");
  }
}
