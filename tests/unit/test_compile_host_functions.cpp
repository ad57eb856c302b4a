// compile::host_functions: NVRTC's "host functions are not allowed in JIT mode" errors, read from
// real logs, and what the compile does with them: a prototype that device code never calls
// compiles (as nvcc compiles it for the host); a host function definition is an error that says
// which function, why, and the two ways out. NVRTC, sm_90, no GPU needed.
#include <kjit/kjit.hpp>

#include "core/compile/host_functions.hpp"
#include "support/helpers.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>

namespace {

const char* k_error =
    "error: A function without execution space annotations (__host__/__device__/__global__) is considered a host "
    "function, and host functions are not allowed in JIT mode. Consider using -default-device flag to process "
    "unannotated functions as __device__ functions in JIT mode";

std::string log_of(const std::string& file, int line, const std::string& text, std::size_t column) {
  return file + "(" + std::to_string(line) + "): " + k_error + "\n  " + text + "\n  " + std::string(column, ' ') + "^\n\n";
}

std::optional<std::string> no_source(const std::string&) { return std::nullopt; }

kjit::CompileResult compile(kjit::Runtime& rt, const std::string& name, const std::string& src) {
  return rt.compile(kjit::Program(name, src), {.arch = kjit::Arch::sm(90)});
}

}  // namespace

TEST_SUITE("host_functions") {
  TEST_CASE("a log's errors: declarations, definitions, constexpr, names and lines") {
    const std::string log = log_of("k.cu", 1, "void host_helper(int n);", 5) +
                            log_of("k.cu", 2, "int twice(int x) { return 2 * x; }", 4) +
                            log_of("common.cuh", 7, "  struct S { void m(int) const; };", 18) +
                            log_of("k.cu", 9, "constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }", 14) +
                            "4 errors detected in the compilation of \"k.cu\".\n";
    const auto found = kjit::compile::find_host_functions(log, no_source);
    REQUIRE(found.functions.size() == 4);
    CHECK(found.only_these);
    CHECK(found.functions[0].name == "host_helper");
    CHECK(found.functions[0].file == "k.cu");
    CHECK(found.functions[0].line == 1);
    CHECK_FALSE(found.functions[0].definition);
    CHECK(found.functions[1].name == "twice");
    CHECK(found.functions[1].definition);
    CHECK(found.functions[2].name == "m");
    CHECK(found.functions[2].file == "common.cuh");
    CHECK_FALSE(found.functions[2].definition);
    CHECK(found.functions[3].name == "ceil_div");
    CHECK(found.functions[3].is_constexpr);
    const std::string why = kjit::compile::explain_host_definitions(found.functions);
    CHECK(why.find("twice (k.cu:2)") != std::string::npos);
    CHECK(why.find("host_helper") == std::string::npos);
    CHECK(why.find("ceil_div") == std::string::npos);
    CHECK(why.find("__device__") != std::string::npos);
    // #52 item 8: the guard that works, not -default-device (which gives the same errors for host code).
    CHECK(why.find("#ifndef __CUDACC_RTC__") != std::string::npos);
    CHECK(why.find("-default-device") == std::string::npos);
  }

  TEST_CASE("a definition whose brace is on the next line is read from the source") {
    const std::string log = log_of("k.cu", 2, "void knr(int n)", 5);
    const auto found = kjit::compile::find_host_functions(log, [](const std::string& file) -> std::optional<std::string> {
      if (file == "k.cu") return std::string("// a kernel file\nvoid knr(int n)\n{\n}\n");
      return std::nullopt;
    });
    REQUIRE(found.functions.size() == 1);
    CHECK(found.functions[0].definition);
    // Without the source it cannot tell, and takes it for a definition: nothing compiled on a guess.
    CHECK(kjit::compile::find_host_functions(log, no_source).functions[0].definition);
  }

  TEST_CASE("another error beside them: not only these") {
    const std::string log = log_of("k.cu", 1, "void host_helper(int n);", 5) +
                            "k.cu(3): error: identifier \"undefined_thing\" is undefined\n  x = undefined_thing;\n      ^\n";
    const auto found = kjit::compile::find_host_functions(log, no_source);
    CHECK(found.functions.size() == 1);
    CHECK_FALSE(found.only_these);
  }

  TEST_CASE("prototypes device code never calls compile, in the file and in a header") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    const std::string src = R"(#include "helpers.cuh"
void host_helper(int n);
int launch(const float* x, float* y, int n);
extern "C" void c_api(int);
struct Plan { void run(int) const; static Plan make(); };
constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }
extern "C" __global__ void k(float* y, int n) { y[0] = ceil_div(n, 32); }
)";
    const kjit::CompileResult r =
        rt.compile(kjit::Program("protos.cu", src).header("helpers.cuh", "#pragma once\nvoid setup(int device);\n"),
                   {.arch = kjit::Arch::sm(90)});
    CHECK(r.ptx.find(".entry k") != std::string::npos);
    CHECK(r.log.find("host_helper") != std::string::npos);  // kjit's note says what it did
    CHECK(r.log.find("setup") != std::string::npos);
    // The options are the request's: the key does not change.
    CHECK(std::find(r.options.begin(), r.options.end(), "-default-device") == r.options.end());
  }

  TEST_CASE("a host function definition a kernel calls is an error that names it and the ways out") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    const std::string src =
        "void host_only(float* p)\n{\n  p[0] = 1;\n}\nextern \"C\" __global__ void k(float* y) { host_only(y); }\n";
    try {
      compile(rt, "defines_host.cu", src);
      FAIL("compiled a host function definition");
    } catch (const kjit::CompileError& e) {
      const std::string log = e.log();
      CHECK_MESSAGE(log.find("host_only (defines_host.cu:1)") != std::string::npos, log);
      CHECK(log.find("annotate a function __device__") != std::string::npos);
      CHECK(log.find("#ifndef __CUDACC_RTC__") != std::string::npos);
    }
    // The second way out works.
    CHECK_NOTHROW(rt.compile(kjit::Program("defines_host.cu", src), {.arch = kjit::Arch::sm(90), .flags = {"-default-device"}}));
  }

  TEST_CASE("a prototype beside a real error is not compiled again: the error stays") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    CHECK_THROWS_AS(compile(rt, "both.cu", "void host_helper(int n);\nextern \"C\" __global__ void k(float* y) { y[0] = missing; }\n"),
                    kjit::CompileError);
  }

  // #52 item 8: a tutorial's file with its main() gave 16 errors and a hint (-default-device) that
  // gave the same 16; the guard that works was named nowhere. Host code around the kernels is
  // left out now, as nvcc compiles it for the host only; the guard still works.
  TEST_CASE("a tutorial file with a host main compiles unchanged and its host code is left out") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    std::random_device rd;
    const std::string kernel = "__global__ void vectorAdd(const float* a, const float* b, float* c, int n) {\n"
                               "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                               "  if (i < n) c[i] = a[i] + b[i] * " + std::to_string(rd() % 1000 + 2) + ".0f;\n"
                               "}\n";
    const std::string host = "static void fill(std::vector<float>& v, float x) {\n"
                             "  for (auto& e : v) e = x;  // } a brace in a comment\n"
                             "}\n"
                             "int main() {\n"
                             "  std::vector<float> a(16, 1.0f);\n"
                             "  fill(a, 2.0f);\n"
                             "  const char* text = \"} in a string {\";\n"
                             "  float* d;\n"
                             "  cudaMalloc(&d, 16 * sizeof(float));\n"
                             "  vectorAdd<<<1, 16>>>(d, d, d, 16);\n"
                             "  std::cout << a[0] << text << std::endl;\n"
                             "  return 0;\n"
                             "}\n";
    const std::string includes = "#include <iostream>\n#include <vector>\n";
    // A kernel after the host code, with a warning: its line number is the file's.
    const std::string after = "__global__ void late(float* y) { int unused; y[0] = 1; }\n";
    kjit::CompileResult r;
    REQUIRE_NOTHROW(r = compile(rt, "vadd.cu", includes + kernel + host + after));
    CAPTURE(r.log);
    CHECK(r.ptx.find(".entry _Z9vectorAddPKfS0_Pfi(") != std::string::npos);
    CHECK(r.ptx.find(".entry _Z4latePf(") != std::string::npos);
    CHECK(r.log.find("host code left out: fill (vadd.cu:7), main (vadd.cu:10)") != std::string::npos);
    CHECK(r.log.find("vadd.cu(20): warning") != std::string::npos);  // the line of `late`
    // The request's options: the key does not change.
    CHECK(std::find(r.options.begin(), r.options.end(), "-default-device") == r.options.end());
    // The guard still works, and gives the same kernels.
    const std::string guarded = "#ifndef __CUDACC_RTC__\n" + includes + "#endif\n" + kernel + "#ifndef __CUDACC_RTC__\n" +
                                host + "#endif\n" + after;
    kjit::CompileResult g;
    REQUIRE_NOTHROW(g = compile(rt, "vadd.cu", guarded));
    CHECK(g.ptx.find(".entry _Z9vectorAddPKfS0_Pfi(") != std::string::npos);
    CHECK(g.log.find("left out") == std::string::npos);
  }

  TEST_CASE("a program that fails without its host code too keeps its own errors and the guard's note") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    // A real error beside the host code: the errors are the program's, not those of a text kjit made.
    try {
      compile(rt, "syntax.cu", "#include <iostream>\n__global__ void k(float* y) { y[0] = 1.0f }\nint main() { std::cout << 1; }\n");
      FAIL("compiled a syntax error");
    } catch (const kjit::CompileError& e) {
      const std::string log = e.log();
      CAPTURE(log);
      CHECK(log.find("syntax.cu(2): error: expected a \";\"") != std::string::npos);
      CHECK(log.find("main (syntax.cu:3)") != std::string::npos);
      CHECK(log.find("#ifndef __CUDACC_RTC__ ... #endif") != std::string::npos);
      CHECK(log.find("left out") == std::string::npos);
    }
  }
}

// compile::without_host_definitions: the text NVRTC gets when host code is left out.
TEST_SUITE("host_functions text") {
  TEST_CASE("host definitions become declarations and every line keeps its number") {
    const std::string src = "int helper(int x)\n{\n  const char* s = \"}\";  /* } */\n  return x; // }\n}\n"
                            "void proto(int);\n"
                            "constexpr int twice(int x) { return 2 * x; }\n"
                            "__global__ void k(int* y) { y[0] = twice(3); }\n";
    std::vector<kjit::compile::HostFunction> functions{
        {.file = "k.cu", .line = 1, .name = "helper", .definition = true},
        {.file = "k.cu", .line = 6, .name = "proto", .definition = false},
        {.file = "k.cu", .line = 7, .name = "twice", .definition = true, .is_constexpr = true},
        {.file = "other.cuh", .line = 1, .name = "helper", .definition = true}};
    const auto out = kjit::compile::without_host_definitions(src, "k.cu", functions);
    REQUIRE(out);
    CAPTURE(*out);
    CHECK(std::count(out->begin(), out->end(), '\n') == std::count(src.begin(), src.end(), '\n'));
    CHECK(out->starts_with("int helper(int x)\n;"));
    CHECK(out->find("return x") == std::string::npos);
    CHECK(out->find("void proto(int);\n") != std::string::npos);
    CHECK(out->find("constexpr int twice(int x) { return 2 * x; }\n") != std::string::npos);
    CHECK(out->find("__global__ void k(int* y) { y[0] = twice(3); }\n") != std::string::npos);
    // Nothing to leave out: nullopt.
    CHECK_FALSE(kjit::compile::without_host_definitions(src, "k.cu", {functions[1], functions[2], functions[3]}));
    // A name not on its line: the program as it is.
    CHECK_FALSE(kjit::compile::without_host_definitions(src, "k.cu", {{.file = "k.cu", .line = 2, .name = "helper", .definition = true}}));
  }
}
