// compile::MinimalFrontEnd and NvrtcCompiler's fast path (NVRTC's --minimal with a fallback):
// every kernel kjit has as data (tests/data/nvcc_corpus, kernels_src/, the warm fixture,
// templates, kjit's standard headers, fp16/bf16) compiles to the same PTX, log, lowered names and
// cubin kernels with the fast path on and off (RuntimeConfig::nvrtc_fast, KJIT_NVRTC_FAST), under
// two keys (the setting is in the key); the programs it cannot take (textures, launches from
// device code, a syntax error) and those that could see the difference (__has_include, ##, a
// spliced name, a conditional on a reserved name) take the full path and compile, or fail,
// exactly as with it off, and the debug log says which front end ran and why.
#include <kjit/kjit.hpp>

#include "core/compile/minimal_front_end.hpp"
#include "core/compile/nvcc_environment.hpp"
#include "core/compile/standard_headers.hpp"
#include "core/driver/cubin_info.hpp"
#include "support/helpers.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using kjit::compile::MinimalFrontEnd;

const std::filesystem::path k_source_dir = KJIT_SOURCE_DIR;

std::string read(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// A comment no earlier run of this process has seen: MinimalFrontEnd remembers failed programs.
std::string fresh_comment() {
  static std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("// {:016x}\n", rng());
}

// The debug lines of one Runtime, and which front end compiled each program.
struct DebugLog {
  std::vector<std::string> lines;
  std::string front_end_of(const std::string& program) const {
    std::string found;
    for (const auto& l : lines) {
      if (l.starts_with("compiled program " + program + " ")) found = l;
    }
    return found;
  }
};

kjit::RuntimeConfig config(const std::filesystem::path& cache, bool fast, DebugLog* log) {
  kjit::RuntimeConfig c = kjit::test::quiet_config(cache);
  c.cache_disabled = true;  // every request compiles
  c.nvrtc_fast = fast;
  if (log) {
    c.log_level = kjit::LogLevel::debug;
    c.log = [log](kjit::LogLevel level, std::string_view m) {
      if (level == kjit::LogLevel::debug) log->lines.emplace_back(m);
    };
  }
  return c;
}

struct Case {
  std::string name;
  std::string source;
  std::filesystem::path dir;
  std::vector<std::string> flags;
  std::vector<std::string> instantiate;
  bool expect_minimal;  // the fast path takes it (it needs none of what --minimal leaves out)
  bool expect_no_environment = false;  // and leaves the nvcc environment out (no include, none of its names)
};

kjit::Program program_of(const Case& c) {
  kjit::Program p(c.name, c.source);
  if (!c.dir.empty()) p.directory(c.dir);
  for (const auto& e : c.instantiate) p.instantiate(e);
  return p;
}

// A log without ptxas's "Compile time = 2.7 ms" lines (-Xptxas -v): the one part that varies.
std::string without_times(const std::string& log) {
  std::string out;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("Compile time = ") == std::string::npos) out += line + "\n";
  }
  return out;
}

// ".entry NAME(" of each kernel in a PTX text.
std::vector<std::string> kernel_names(const std::string& ptx) {
  std::vector<std::string> out;
  for (std::size_t p = ptx.find(".entry "); p != std::string::npos; p = ptx.find(".entry ", p + 1)) {
    const std::size_t open = ptx.find('(', p);
    out.push_back(ptx.substr(p + 7, open - p - 7));
  }
  return out;
}

std::vector<Case> every_kernel() {
  std::vector<Case> cases;
  const auto corpus = k_source_dir / "tests/data/nvcc_corpus";
  const std::string blas_include = "-I" + (corpus / "include").string();
  // As tests/unit/test_compile_nvcc_corpus.cpp gives them: each file with its nvcc flags.
  const std::vector<std::tuple<std::string, std::vector<std::string>, std::vector<std::string>, bool>> files = {
      {"gelu_lecture.cu", {"-O3", "-lineinfo"}, {}, true},
      {"vector_add_host.cu", {"-O2", "-Xcompiler", "-Wall", "--default-stream", "per-thread"}, {}, false},  // CUDA_CHECK
      {"softmax_llmc.cu", {"--use_fast_math", "-gencode", "arch=compute_90,code=sm_90"}, {}, false},
      {"scale_cublas_types.cu", {blas_include, "-lcublas"}, {}, false},
      {"templated_reduce.cu", {"--expt-relaxed-constexpr", "-std=c++17"}, {"block_max<float, 128>", "block_max<int, 256>"}, true},
      {"sgemm_relaxed_constexpr.cu", {"--expt-relaxed-constexpr", "-res-usage", "-arch=sm_90"}, {}, true},
      {"lambda_transform.cu", {"--extended-lambda", "-Xptxas", "-v"}, {}, true},
      {"rng_types.cu", {"-g", "-Xcompiler", "-Wextra,-fPIC", "-lineinfo"}, {}, false},
  };
  for (const auto& [file, flags, names, minimal] : files) {
    cases.push_back({file, read(corpus / file), corpus, flags, names, minimal});
  }
  // kernels_src/: the shipped kernels with the instantiations their manifest asks for.
  const auto kernels = k_source_dir / "kernels_src";
  const auto manifest = nlohmann::json::parse(read(kernels / "kjit.json"));
  for (const auto& k : manifest["kernels"]) {
    Case c{k["file"], read(kernels / k["file"].get<std::string>()), kernels, {}, {}, true};
    for (const auto& e : k.value("instantiate", nlohmann::json::array())) c.instantiate.push_back(e);
    cases.push_back(std::move(c));
  }
  const auto warm = k_source_dir / "tests/data/warm_fixture";
  cases.push_back({"saxpy.cu", read(warm / "saxpy.cu"), warm, {"-I" + (warm / "include").string()}, {}, true, true});
  // The lecture's square (what bench/peers compiles), a template with kjit's standard headers,
  // names nvcc makes visible (the nvcc environment), and the half types.
  cases.push_back({"square.cu", R"(
__global__ void square_matrix_kernel(const float* matrix, float* result, int width, int height) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < height && col < width) {
        int idx = row * width + col;
        result[idx] = matrix[idx] * matrix[idx];
    }
})", {}, {}, {}, true, true});
  // No include, but names of the nvcc environment: it stays (without it, M_PI and uint are unknown).
  cases.push_back({"environment_names.cu", R"(
extern "C" __global__ void angle(float* y, uint n) {
  uint i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = (float)M_PI * i;
})", {}, {"-DSCALE=2"}, {}, true, false});
  cases.push_back({"plain_template.cu", R"(
template <typename T, int N> __global__ void fill(T* y, T v) { y[blockIdx.x * N + threadIdx.x] = v; }
)", {}, {"-DUNUSED=1"}, {"fill<float, 64>", "fill<double, 32>"}, true, true});
  cases.push_back({"scale_template.cu", R"(#include <type_traits>
#include <limits>
#include <cstdint>
#include <algorithm>
template <class T, int N>
__global__ void scale(T* x, std::int64_t n, T s) {
  static_assert(std::is_arithmetic_v<T>);
  for (std::int64_t i = blockIdx.x * N + threadIdx.x; i < n; i += gridDim.x * N)
    x[i] = std::min(x[i] * s, std::numeric_limits<T>::max());
})", {}, {"-std=c++17"}, {"scale<float, 128>", "scale<double, 256>", "scale<int, 64>"}, true});
  cases.push_back({"nvcc_names.cu", R"(#include <cmath>
#include <cfloat>
extern "C" __global__ void magnitude(const float* x, float* y, uint n) {
  uint i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = isinf(x[i]) ? FLT_MAX : sqrtf(fabsf(x[i])) + std::exp(x[i]) + (float)M_PI + INFINITY * 0.f;
})", {}, {"--use_fast_math"}, {}, true});
  cases.push_back({"halves.cu", R"(#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void mix(const __half* a, const __nv_bfloat16* b, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __half2float(__hmul(a[i], a[i])) + __bfloat162float(b[i]);
})", {}, {}, {}, true});
  return cases;
}

}  // namespace

TEST_SUITE("minimal_front_end") {
  TEST_CASE("the scan names what --minimal leaves out and passes over comments strings and include targets") {
    CHECK(MinimalFrontEnd::excluded_name("__global__ void k(float* x) { x[0] = 1.f; }").empty());
    CHECK(MinimalFrontEnd::excluded_name("cudaError_t e = cudaGetLastError();") == "cudaError_t");
    CHECK(MinimalFrontEnd::excluded_name("void f() { int d; cudaGetDevice(&d); }") == "cudaGetDevice");
    CHECK(MinimalFrontEnd::excluded_name("CUdeviceptr p;") == "CUdeviceptr");
    CHECK(MinimalFrontEnd::excluded_name("#if CUDART_VERSION >= 12000\n#endif") == "CUDART_VERSION");
    CHECK(MinimalFrontEnd::excluded_name("float v = tex1Dfetch<float>(t, i);") == "tex1Dfetch");
    CHECK(MinimalFrontEnd::excluded_name("surf2Dwrite(v, s, x, y);") == "surf2Dwrite");
    CHECK(MinimalFrontEnd::excluded_name("auto e = make_cudaExtent(1, 2, 3);") == "make_cudaExtent");
    CHECK(MinimalFrontEnd::excluded_name("__global__ void p() { child<<<1, 32>>>(); }") == "<<<");
    CHECK(MinimalFrontEnd::excluded_name("#include HEADER_NAME\n") == "#include MACRO");
    // Passed over: comments, literals, include targets, number suffixes, cuda:: alone.
    CHECK(MinimalFrontEnd::excluded_name("// cudaMalloc\n/* CUdeviceptr\n tex2D */ int x = 1;").empty());
    CHECK(MinimalFrontEnd::excluded_name("const char* s = \"cudaMalloc <<<\"; char c = 'C';").empty());
    CHECK(MinimalFrontEnd::excluded_name("const char* r = R\"x(cudaFree \" tex2D)x\";").empty());
    CHECK(MinimalFrontEnd::excluded_name("#include <cuda_fp16.h>\n#include \"CUstuff.h\"\nint a;").empty());
    CHECK(MinimalFrontEnd::excluded_name("unsigned x = 0x1CU + 1'000u; cuda::std::size_t n;").empty());
    CHECK(MinimalFrontEnd::excluded_name("int a; // x\\\n cudaMalloc continues the comment\nint b;").empty());
  }

  TEST_CASE("the nvcc environment's names are found and a program without them is told apart") {
    using kjit::compile::NvccEnvironment;
    CHECK(NvccEnvironment::name_used("__global__ void k(float* x, int n) { x[threadIdx.x] *= 2.f; }").empty());
    CHECK(NvccEnvironment::name_used("float y = M_PI;") == "M_PI");
    CHECK(NvccEnvironment::name_used("uint i = 0;") == "uint");
    CHECK(NvccEnvironment::name_used("float z = std::exp(1.f);") == "std");
    CHECK(NvccEnvironment::name_used("float z = sqrtf(2.f);") == "sqrtf");
    CHECK(NvccEnvironment::name_used("float z = 1.f; // INFINITY FLT_MAX").empty());
    CHECK(NvccEnvironment::name_used("#define X INFINITY") == "INFINITY");
  }

  TEST_CASE("kjit's standard headers name nothing --minimal leaves out and the allowed toolkit headers are few") {
    for (const auto& [name, content] : kjit::compile::standard_header_files()) {
      INFO(name);
      CHECK(MinimalFrontEnd::excluded_name(content).empty());
    }
    CHECK(MinimalFrontEnd::allowed_toolkit_header("cuda_fp16.h"));
    CHECK_FALSE(MinimalFrontEnd::allowed_toolkit_header("cub/block/block_reduce.cuh"));
    CHECK_FALSE(MinimalFrontEnd::allowed_toolkit_header("cuda.h"));
    kjit::compile::ProgramText text;
    text.source = "int x;";
    CHECK(MinimalFrontEnd::ruled_out(text).empty());
    text.other_includes = {"cub/block/block_reduce.cuh"};
    CHECK(MinimalFrontEnd::ruled_out(text).find("cub/block/block_reduce.cuh") != std::string::npos);
    text.other_includes = {"cstdint", "cuda_bf16.h"};
    CHECK(MinimalFrontEnd::ruled_out(text).empty());
    text.arguments = {"-DSTREAM=cudaStreamPerThread"};
    CHECK(MinimalFrontEnd::ruled_out(text).find("cudaStreamPerThread") != std::string::npos);
    text.arguments = {"-D", "STREAM=cudaStreamLegacy"};
    CHECK(MinimalFrontEnd::ruled_out(text).find("cudaStreamLegacy") != std::string::npos);
    text.arguments = {"--pre-include=__kjit_nvcc.h", "-DN=4"};
    CHECK(MinimalFrontEnd::ruled_out(text).empty());
    text.arguments = {"-include", "mine.h"};
    CHECK(MinimalFrontEnd::ruled_out(text).find("pre-include") != std::string::npos);
    text.arguments = {"--pre-include=mine.h"};
    CHECK(MinimalFrontEnd::ruled_out(text).find("mine.h") != std::string::npos);
  }

  TEST_CASE("every kernel compiles to the same PTX log cubin kernels and key with the fast path on and off") {
    kjit::test::TempDir dir;
    DebugLog log;
    kjit::Runtime fast(config(dir / "fast", true, &log));
    kjit::Runtime full(config(dir / "full", false, nullptr));
    int minimal = 0;
    for (const auto& c : every_kernel()) {
      INFO(c.name);
      const kjit::Program p = program_of(c);
      const kjit::CompileOptions o{.arch = kjit::Arch::sm(90), .flags = c.flags};
      kjit::CompileResult a, b;
      REQUIRE_NOTHROW(a = fast.compile(p, o));
      REQUIRE_NOTHROW(b = full.compile(p, o));
      const std::string front_end = log.front_end_of(c.name);
      MESSAGE(front_end);
      CHECK(front_end.find(c.expect_minimal ? "with NVRTC's minimal front end" : "with NVRTC's full front end (") !=
            std::string::npos);
      minimal += c.expect_minimal;
      CHECK((front_end.find("without the nvcc environment") != std::string::npos) == c.expect_no_environment);
      CHECK(a.outcome == kjit::Outcome::compiled);
      CHECK(b.outcome == kjit::Outcome::compiled);
      CHECK(a.key != b.key);  // the fast path's setting is in the key
      CHECK_FALSE(a.key.empty());
      CHECK(a.ptx == b.ptx);
      CHECK(without_times(a.log) == without_times(b.log));
      CHECK(a.lowered_names == b.lowered_names);
      CHECK(a.options == b.options);
      const auto names = kernel_names(a.ptx);
      REQUIRE_FALSE(names.empty());
      REQUIRE_FALSE(a.cubin.empty());
      CHECK(names == kernel_names(b.ptx));
      for (const auto& name : names) {
        INFO(name);
        const auto sa = kjit::driver::cubin_param_sizes(a.cubin, name);
        const auto sb = kjit::driver::cubin_param_sizes(b.cubin, name);
        REQUIRE(sa.has_value());
        REQUIRE(sb.has_value());
        CHECK(*sa == *sb);
      }
      CHECK(a.cubin == b.cubin);
    }
    CHECK(minimal >= 14);
    MESSAGE(fmt::format("the fast path took {} of {} kernel files", minimal, every_kernel().size()));
  }

  TEST_CASE("what could see the path takes the full one: __has_include, ##, splices, reserved names") {
    kjit::test::TempDir dir;
    DebugLog log;
    kjit::Runtime fast(config(dir / "fast", true, &log));
    kjit::Runtime full(config(dir / "full", false, nullptr));
    auto guarded = [](std::string_view condition, std::string_view value = "1.0f") {
      return fmt::format("#if {}\n#define V {}\n#else\n#define V -1.0f\n#endif\n"
                         "extern \"C\" __global__ void k(float* x) {{ x[0] = V; }}\n", condition, value);
    };
    const std::vector<std::pair<std::string, std::string>> cases = {
        {guarded("__has_include(<cstdint>)"), "it asks __has_include"},
        {guarded("__has_include_next(<cmath>)"), "it asks __has_include_next"},
        {"#define CAT(a, b) a##b\n#define XCAT(a, b) CAT(a, b)\n"
         "extern \"C\" __global__ void k(float* x) { x[0] = (float)XCAT(M_, PI); }\n", "token pasting"},
        {"#include <cfloat>\n#define CAT(a, b) a##b\n#define XCAT(a, b) CAT(a, b)\n"
         "extern \"C\" __global__ void k(float* x) { x[0] = XCAT(FLT_, DIG); }\n", "token pasting"},
        {"extern \"C\" __global__ void k(float* x) { x[0] = (float)M_\\\nPI; }\n", "split by a line splice"},
        {guarded("defined(__TEXTURE_INDIRECT_FUNCTIONS_H__)"), "reserved name __TEXTURE_INDIRECT_FUNCTIONS_H__"},
        {guarded("defined(__SURFACE_INDIRECT_FUNCTIONS_H__)"), "reserved name __SURFACE_INDIRECT_FUNCTIONS_H__"},
        {"#ifdef __CUDART_API_PTDS\n#define V 1.0f\n#else\n#define V -1.0f\n#endif\n"
         "extern \"C\" __global__ void k(float* x) { x[0] = V; }\n", "reserved name __CUDART_API_PTDS"},
        {"#ifndef __CUDART_API_PTSZ\n#define V 1.0f\n#else\n#define V -1.0f\n#endif\n"
         "extern \"C\" __global__ void k(float* x) { x[0] = V; }\n", "reserved name __CUDART_API_PTSZ"},
        {guarded("defined(__CUDACC_RTC_MINIMAL__)"), "__CUDACC_RTC_MINIMAL__"},
        {"#define UNUSED __CUDACC_RTC_MINIMAL__\nextern \"C\" __global__ void k(int* x) { x[0] = 1; }\n",
         "__CUDACC_RTC_MINIMAL__"},
    };
    int n = 0;
    for (const auto& [source, why] : cases) {
      const std::string name = fmt::format("observes_{}.cu", n++);
      INFO(name, "\n", source);
      const kjit::Program p(name, fresh_comment() + source);
      kjit::CompileResult a, b;
      REQUIRE_NOTHROW(a = fast.compile(p, {.arch = kjit::Arch::sm(90)}));
      REQUIRE_NOTHROW(b = full.compile(p, {.arch = kjit::Arch::sm(90)}));
      CHECK(a.ptx == b.ptx);
      CHECK(a.cubin == b.cubin);
      CHECK(a.key != b.key);
      const std::string line = log.front_end_of(name);
      CHECK_MESSAGE(line.find("full front end (") != std::string::npos, line);
      CHECK_MESSAGE(line.find(why) != std::string::npos, line);
      CHECK(line.find("without the nvcc environment") == std::string::npos);
    }
    // The reserved names the fast path lets through are defined alike on both paths: the same PTX,
    // and the minimal front end.
    for (std::string_view stable : {"__CUDA_ARCH__", "__CUDACC__", "__NVCC__", "__CUDACC_RTC__", "__cplusplus",
                                    "__CUDACC_VER_MAJOR__", "__CUDACC_VER_MINOR__", "__CUDACC_VER_BUILD__",
                                    "__CUDACC_RDC__", "__CUDACC_EWP__", "__CUDACC_DEBUG__", "__CUDA_ARCH_LIST__",
                                    "__CUDA_ARCH_SPECIFIC__", "__CUDA_ARCH_FAMILY_SPECIFIC__", "__FILE__", "__LINE__",
                                    "__COUNTER__", "__STDC__"}) {
      const std::string name = fmt::format("stable_{}.cu", stable);
      INFO(name);
      const kjit::Program p(name, fresh_comment() + guarded(fmt::format("defined({})", stable), "2.0f"));
      kjit::CompileResult a, b;
      REQUIRE_NOTHROW(a = fast.compile(p, {.arch = kjit::Arch::sm(90)}));
      REQUIRE_NOTHROW(b = full.compile(p, {.arch = kjit::Arch::sm(90)}));
      CHECK(a.ptx == b.ptx);
      CHECK_MESSAGE(log.front_end_of(name).find("minimal front end") != std::string::npos, log.front_end_of(name));
    }
  }

  TEST_CASE("a texture kernel and a device launch with -rdc compile with the fast path: ruled out or fallen back") {
    kjit::test::TempDir dir;
    DebugLog log;
    kjit::Runtime fast(config(dir / "fast", true, &log));
    kjit::Runtime full(config(dir / "full", false, nullptr));
    const kjit::CompileOptions o{.arch = kjit::Arch::sm(90)};
    const kjit::CompileOptions rdc{.arch = kjit::Arch::sm(90), .flags = {"-rdc=true"}};
    auto same = [&](const kjit::Program& p, const kjit::CompileOptions& opts, std::string_view expected) {
      INFO(p.name());
      kjit::CompileResult a, b;
      REQUIRE_NOTHROW(a = fast.compile(p, opts));
      REQUIRE_NOTHROW(b = full.compile(p, opts));
      CHECK(a.ptx == b.ptx);
      CHECK(a.cubin == b.cubin);
      CHECK(a.log == b.log);
      CHECK(a.key != b.key);
      const std::string line = log.front_end_of(p.name());
      CHECK_MESSAGE(line.find(expected) != std::string::npos, line);
    };
    // Named: the scan rules --minimal out before NVRTC runs.
    same(kjit::Program("texture.cu", fresh_comment() + R"(
extern "C" __global__ void fetch(cudaTextureObject_t t, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = tex1Dfetch<float>(t, i) * 2.f;
})"),
         o, "full front end (the source names cudaTextureObject_t)");
    same(kjit::Program("launch.cu", fresh_comment() + R"(
__global__ void child(float* x) { x[threadIdx.x] *= 2.f; }
extern "C" __global__ void parent(float* x) { if (threadIdx.x == 0) child<<<1, 32>>>(x); }
)"),
         rdc, "full front end (the source names <<<)");
    // Token pasting could build any name: the full path, decided before NVRTC runs.
    const std::string pasted_texture = fresh_comment() + R"(
#define PASTE(a, b) a##b
extern "C" __global__ void fetch(PASTE(cuda, TextureObject_t) t, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = PASTE(te, x1Dfetch)<float>(t, i) * 2.f;
})";
    same(kjit::Program("pasted_texture.cu", pasted_texture), o, "full front end (the source: token pasting");
    same(kjit::Program("pasted_device_runtime.cu", fresh_comment() + R"(
#define PASTE(a, b) a##b
extern "C" __global__ void where(int* out) { int d = -1; PASTE(cu, daGetDevice)(&d); out[threadIdx.x] = d; }
)"),
         rdc, "full front end (the source: token pasting");
  }

  TEST_CASE("relocatable code and LTO-IR are the same with the fast path on and off") {
    kjit::test::TempDir dir;
    DebugLog log;
    kjit::Runtime fast(config(dir / "fast", true, &log));
    kjit::Runtime full(config(dir / "full", false, nullptr));
    const kjit::Program p("lto.cu", R"(
__device__ float helper(float v);
extern "C" __global__ void apply(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = helper(x[i]) * 3.f;
})");
    for (const auto& flags : {std::vector<std::string>{"-rdc=true"}, std::vector<std::string>{"-rdc=true", "-dlto"}}) {
      INFO(flags.back());
      const kjit::CompileOptions o{.arch = kjit::Arch::sm(90), .flags = flags};
      kjit::CompileResult a, b;
      REQUIRE_NOTHROW(a = fast.compile(p, o));
      REQUIRE_NOTHROW(b = full.compile(p, o));
      CHECK(log.front_end_of("lto.cu").find("minimal front end") != std::string::npos);
      CHECK(a.key != b.key);
      CHECK(a.ptx == b.ptx);
      CHECK(a.cubin == b.cubin);
      CHECK(a.ltoir == b.ltoir);
      CHECK((flags.back() == "-dlto") == !a.ltoir.empty());
    }
  }

  TEST_CASE("a syntax error is reported once with the user's line and the same log as without the fast path") {
    kjit::test::TempDir dir;
    DebugLog log;
    kjit::Runtime fast(config(dir / "fast", true, &log));
    kjit::Runtime full(config(dir / "full", false, nullptr));
    const kjit::Program p("broken.cu", fresh_comment() + R"(extern "C" __global__ void k(float* x) {
  float y = 2.f;
  x[threadIdx.x] = y * ;
})");
    auto error_of = [&p](kjit::Runtime& rt) {
      try {
        rt.compile(p, {.arch = kjit::Arch::sm(90)});
      } catch (const kjit::CompileError& e) {
        return std::pair<std::string, std::string>(e.log(), e.what());
      }
      FAIL("no CompileError");
      return std::pair<std::string, std::string>();
    };
    const auto [fast_log, fast_message] = error_of(fast);
    const auto [full_log, full_message] = error_of(full);
    CHECK(fast_log == full_log);
    CHECK(fast_message == full_message);
    auto count = [](const std::string& text, std::string_view what) {
      int n = 0;
      for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
      return n;
    };
    CHECK(count(fast_log, "broken.cu(4): error") == 1);
    CHECK(fast_log.find("minimal") == std::string::npos);
    CHECK(fast_message.find("minimal") == std::string::npos);
    CHECK(fast_message.find("x[threadIdx.x] = y * ;") != std::string::npos);  // the excerpt
  }

  TEST_CASE("KJIT_NVRTC_FAST is on unless set off and RuntimeConfig's field follows it") {
    {
      kjit::test::ScopedEnv unset("KJIT_NVRTC_FAST", nullptr);
      CHECK(kjit::RuntimeConfig::from_environment().nvrtc_fast);
    }
    {
      kjit::test::ScopedEnv off("KJIT_NVRTC_FAST", "off");
      CHECK_FALSE(kjit::RuntimeConfig::from_environment().nvrtc_fast);
    }
    {
      kjit::test::ScopedEnv bad("KJIT_NVRTC_FAST", "sometimes");
      CHECK_THROWS_AS(kjit::RuntimeConfig::from_environment(), kjit::UsageError);
    }
    kjit::RuntimeConfig c;
    CHECK(c.nvrtc_fast);
    c.set("nvrtc_fast", "0");
    CHECK_FALSE(c.nvrtc_fast);
  }
}
