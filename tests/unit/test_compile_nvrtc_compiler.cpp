// compile::NvrtcCompiler's notes in a failed compile's log (#57 items 18, 19): what NVRTC says
// for a kernel that launches a kernel without -rdc, and for a name expression whose template
// excludes its arguments, each completed by one "kjit:" line that says what to do. Real NVRTC,
// sm_90, no GPU; random constants so no entry is shared by chance.
#include <kjit/kjit.hpp>

#include "support/helpers.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <random>
#include <string>

namespace {

int random_factor() {
  std::random_device rd;
  return static_cast<int>(rd() % 1000) + 2;
}

// The log of a compile that must fail.
std::string failed_log(kjit::Runtime& rt, const kjit::Program& program, const kjit::CompileOptions& options) {
  try {
    rt.compile(program, options);
  } catch (const kjit::CompileError& e) {
    return e.log();
  }
  FAIL("compiled: ", program.name());
  return {};
}

const kjit::CompileOptions k_sm90{.arch = kjit::Arch::sm(90)};

}  // namespace

TEST_SUITE("NvrtcCompiler") {
  TEST_CASE("a kernel that launches a kernel without -rdc gets the line naming the link and -rdc") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    const kjit::Program p("cdp.cu", fmt::format("__global__ void child(float* x) {{ x[threadIdx.x] *= {}; }}\n"
                                                "__global__ void parent(float* x) {{ child<<<1, 32>>>(x); }}\n",
                                                random_factor()));
    const std::string log = failed_log(rt, p, k_sm90);
    INFO(log);
    CHECK(log.find("device-side kernel launch could not be processed") != std::string::npos);
    CHECK(log.find("kjit: a kernel of cdp.cu launches a kernel from the device") != std::string::npos);
    CHECK(log.find("kjit compile --link cdp.cu") != std::string::npos);
    CHECK(log.find("-rdc") != std::string::npos);
    CHECK(log.find("libcudadevrt.a") != std::string::npos);
    // What the line says works: the same program in a link (kjit adds the device runtime).
    const kjit::CompileResult linked = rt.link(kjit::Link("cdp").add(p), k_sm90);
    CHECK(linked.has_cubin());
  }

  TEST_CASE("a name expression whose template excludes its arguments says so and quotes NVRTC") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    const std::string source = fmt::format(
        "#include <type_traits>\n"
        "template <class T, typename std::enable_if<std::is_integral<T>::value, int>::type = 0>\n"
        "__global__ void shift(T* x, int n) {{ x[threadIdx.x] <<= n + {}; }}\n",
        random_factor());
    const std::string log = failed_log(rt, kjit::Program("shift.cu", source).instantiate("shift<float>"), k_sm90);
    INFO(log);
    CHECK(log.find("kjit: the name expression \"shift<float>\" names no instance") != std::string::npos);
    CHECK(log.find("enable_if") != std::string::npos);
    CHECK(log.find("NVRTC: cannot determine which instance of function template \"shift\" is intended") !=
          std::string::npos);
    CHECK(log.find("looked up from the global namespace") == std::string::npos);  // not the namespace hint
    // An argument the template takes compiles.
    CHECK(rt.compile(kjit::Program("shift.cu", source).instantiate("shift<int>"), k_sm90).ptx.find(".entry") !=
          std::string::npos);
    // A template in a namespace named without it still gets the namespace hint.
    const std::string in_namespace = fmt::format(
        "namespace ops {{ template <class T> __global__ void gelu(T* x) {{ x[0] *= T({}); }} }}\n", random_factor());
    const std::string ns = failed_log(rt, kjit::Program("ns.cu", in_namespace).instantiate("gelu<float>"), k_sm90);
    INFO(ns);
    CHECK(ns.find("name it \"ops::gelu<float>\"") != std::string::npos);
    CHECK(ns.find("names no instance") == std::string::npos);
  }
}

// #57 item 9: a log full of Thrust's errors begins with the line for Thrust, not CUB's.
TEST_SUITE("NvrtcCompiler") {
  TEST_CASE("thrust's complex gets its own first line and a thrust containers tutorial compiles as under nvcc") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    const int factor = random_factor();
    const std::string complex_kernel = fmt::format(
        "#include <thrust/complex.h>\n"
        "__global__ void k(thrust::complex<float>* z) {{ z[0] = z[0] * {}.0f; }}\n", factor);
    const std::string complex_log = failed_log(rt, kjit::Program("cplx.cu", complex_kernel), k_sm90);
    INFO(complex_log.substr(0, 2000));
    CHECK(complex_log.starts_with("kjit: <thrust/complex.h> is host code under NVRTC"));
    CHECK(complex_log.find("cuda::std::complex") != std::string::npos);
    CHECK(complex_log.find("CUB's device-wide") == std::string::npos);
    // What it says compiles.
    CHECK(rt.compile(kjit::Program("cplx.cu", fmt::format("#include <cuda/std/complex>\n"
                                                          "__global__ void k(cuda::std::complex<float>* z) {{ z[0] = z[0] * "
                                                          "{}.0f; }}\n", factor)),
                     k_sm90).ptx.find(".entry") != std::string::npos);

    // A thrust::device_vector tutorial, as nvcc compiles it.
    const std::string kernel = fmt::format("__global__ void scale(float* x, int n) {{ int i = threadIdx.x; "
                                           "if (i < n) x[i] *= {}; }}\n", factor);
    const std::string host = "int main() {\n  thrust::host_vector<float> h(16, 1.0f);\n  thrust::device_vector<float> d = h;\n"
                             "  scale<<<1, 16>>>(thrust::raw_pointer_cast(d.data()), 16);\n  h = d;\n"
                             "  printf(\"%f\\n\", h[0]);\n}\n";
    const std::string tutorial = "#include <cstdio>\n#include <thrust/device_vector.h>\n#include <thrust/host_vector.h>\n" +
                                 kernel + host;
    // #56: nvcc's program compiles unchanged: the host code (main, Thrust's containers) left out, the
    // kernel kept, and the log says what went (Thrust's host code) with the #ifndef line.
    const kjit::CompileResult tut = rt.compile(kjit::Program("tut.cu", tutorial), k_sm90);
    INFO(tut.log.substr(0, 2000));
    CHECK(tut.ptx.find(".entry _Z5scalePfi(") != std::string::npos);
    CHECK(tut.log.find("main") != std::string::npos);
    // The guarded form compiles as well.
    const std::string guarded = "#include <cstdio>\n#ifndef __CUDACC_RTC__\n#include <thrust/device_vector.h>\n"
                                "#include <thrust/host_vector.h>\n#endif\n" + kernel + "#ifndef __CUDACC_RTC__\n" + host +
                                "#endif\n";
    CHECK(rt.compile(kjit::Program("tut.cu", guarded), k_sm90).ptx.find(".entry") != std::string::npos);
  }
}

// #57 item 10: a tutorial's host code: one note, no warning about kjit's own rewriting, and a line
// for -default-device given by the user.
TEST_SUITE("NvrtcCompiler") {
  TEST_CASE("host code left out is one note and its rewritten lines are never quoted") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    const std::string source = fmt::format(R"(#include <cstdio>
#include <vector>

__global__ void add(const float* a, float* b, int n) {{ int i = threadIdx.x; if (i < n) b[i] += a[i] * {}; }}

static void fill(std::vector<float>& v) {{
  for (auto& x : v) x = 1.0f;
}}

void init(float* p, int n) {{ for (int i = 0; i < n; ++i) p[i] = 0; }}

int main() {{
  std::vector<float> v(16);
  fill(v);
  float* d = nullptr;
  cudaMalloc(&d, 64);
  add<<<1, 16>>>(d, d, 16);
  printf("%f\n", v[0]);
  return 0;
}}
)", random_factor());
    const kjit::Program p("tutorial.cu", source);
    const kjit::CompileResult r = rt.compile(p, k_sm90);
    INFO(r.log);
    CHECK(r.ptx.find(".entry") != std::string::npos);
    CHECK(r.log.find("kjit: host code left out: fill (tutorial.cu:6), init (tutorial.cu:10), main (tutorial.cu:12)") !=
          std::string::npos);
    CHECK(r.log.find("compiled as device functions") == std::string::npos);  // no second, contradicting note
    CHECK(r.log.find("was declared but never referenced") == std::string::npos);
    CHECK(r.log.find("static void fill(std::vector<float>& v) ;") == std::string::npos);  // kjit's rewritten line
    CHECK(r.log.find("Remark: The warnings can be suppressed") == std::string::npos);
    // A hit gives the same log: nothing of kjit's rewriting replayed either.
    kjit::Runtime again(kjit::test::quiet_config(dir / "cache"));
    const kjit::CompileResult hit = again.compile(p, k_sm90);
    CHECK(hit.outcome == kjit::Outcome::hit);
    CHECK(hit.log == r.log);

    // The user's -default-device compiles that host code as device code: a line says so.
    const std::string log = failed_log(rt, p, {.arch = kjit::Arch::sm(90), .flags = {"-default-device"}});
    INFO(log);
    CHECK(log.find("kjit: -default-device compiles every function without __host__ or __device__ as device code") !=
          std::string::npos);
    CHECK(log.find("drop -default-device") != std::string::npos);
  }
}
