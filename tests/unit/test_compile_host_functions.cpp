// compile::host_functions: NVRTC's "not allowed in JIT mode" errors of host code, read from real
// logs, and what the compile does with them: host functions and variables are left out wherever
// they are (the file, its in-memory headers, the user headers on disk), never a byte of device code;
// a program that does not compile without them keeps its own errors and kjit's note. NVRTC, sm_90,
// no GPU needed.
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


kjit::CompileResult compile(kjit::Runtime& rt, const std::string& name, const std::string& src) {
  return rt.compile(kjit::Program(name, src), {.arch = kjit::Arch::sm(90)});
}

}  // namespace

TEST_SUITE("host_functions") {
  TEST_CASE("a log's errors: functions, __host__ functions, variables, constexpr, names, lines and columns") {
    const std::string log = log_of("k.cu", 1, "void host_helper(int n);", 5) +
                            log_of("k.cu", 2, "int twice(int x) { return 2 * x; }", 4) +
                            log_of("common.cuh", 7, "  struct S { void m(int) const; };", 18) +
                            log_of("k.cu", 9, "constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }", 14) +
                            "k.cu(10): error: A namespace scope variable without memory space annotations "
                            "(__device__/__constant__/__shared__/__managed__) is considered a host variable, and host "
                            "variables are not allowed in JIT mode.\n  static float* d_qkvr;\n                ^\n\n"
                            "k.cu(11): error: A function explicitly marked as a __host__ function is not allowed in JIT "
                            "mode\n  __host__ void f(int n) {}\n                ^\n\n"
                            "6 errors detected in the compilation of \"k.cu\".\n";
    const auto found = kjit::compile::find_host_code(log);
    REQUIRE(found.declarations.size() == 6);
    CHECK(found.only_these);
    CHECK(found.declarations[0].name == "host_helper");
    CHECK(found.declarations[0].file == "k.cu");
    CHECK(found.declarations[0].line == 1);
    CHECK(found.declarations[0].column == 6);
    CHECK(found.declarations[1].name == "twice");
    CHECK(found.declarations[2].name == "m");
    CHECK(found.declarations[2].file == "common.cuh");
    CHECK(found.declarations[3].name == "ceil_div");
    CHECK(found.declarations[3].is_constexpr);
    CHECK(found.declarations[4].name == "d_qkvr");
    CHECK(found.declarations[4].kind == kjit::compile::HostDeclaration::Kind::variable);
    CHECK(found.declarations[5].name == "f");
    CHECK(found.declarations[5].explicit_host);
    const std::string why = kjit::compile::explain_host_definitions(found.declarations, "");
    CHECK(why.find("twice (k.cu:2)") != std::string::npos);
    CHECK(why.find("the variable d_qkvr (k.cu:10)") != std::string::npos);
    CHECK(why.find("ceil_div") == std::string::npos);
    CHECK(why.find("__device__") != std::string::npos);
    // #52 item 8: the guard that works, not -default-device (which gives the same errors for host code).
    CHECK(why.find("#ifndef __CUDACC_RTC__") != std::string::npos);
    CHECK(why.find("-default-device") == std::string::npos);
  }

  TEST_CASE("another error beside them: not only these") {
    const std::string log = log_of("k.cu", 1, "void host_helper(int n);", 5) +
                            "k.cu(3): error: identifier \"undefined_thing\" is undefined\n  x = undefined_thing;\n      ^\n";
    const auto found = kjit::compile::find_host_code(log);
    CHECK(found.declarations.size() == 1);
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

// compile::leave_out_host_code: the text NVRTC gets when host code is left out.
namespace {

using kjit::compile::HostDeclaration;

HostDeclaration function_at(int line, int column, std::string name) {
  return {.file = "k.cu", .line = line, .column = column, .name = std::move(name)};
}

std::string left_out_text(const std::string& src, const std::vector<HostDeclaration>& found) {
  const auto context = kjit::compile::program_context({src});
  auto out = kjit::compile::leave_out_host_code(src, "k.cu", found, context);
  if (auto* why = std::get_if<std::string>(&out)) FAIL(*why);
  const auto& left = std::get<kjit::compile::HostCodeLeftOut>(out);
  CHECK(std::count(left.text.begin(), left.text.end(), '\n') == std::count(src.begin(), src.end(), '\n'));
  return left.text;
}

}  // namespace

TEST_SUITE("host_functions text") {
  TEST_CASE("a definition, a prototype and a variable go whole, constexpr and device code stay, lines keep their numbers") {
    const std::string src = "int helper(int x)\n{\n  const char* s = \"}\";  /* } */\n  return x; // }\n}\n"
                            "void proto(int);\n"
                            "constexpr int twice(int x) { return 2 * x; }\n"
                            "__global__ void k(int* y) { y[0] = twice(3); }\n"
                            "static float* d_qkvr;\n";
    HostDeclaration variable = function_at(9, 15, "d_qkvr");
    variable.kind = HostDeclaration::Kind::variable;
    HostDeclaration constant = function_at(7, 15, "twice");
    constant.is_constexpr = true;
    const std::string out = left_out_text(src, {function_at(1, 5, "helper"), function_at(6, 6, "proto"), constant, variable});
    CAPTURE(out);
    CHECK(out.find("helper") == std::string::npos);
    CHECK(out.find("return x") == std::string::npos);
    CHECK(out.find("proto") == std::string::npos);
    CHECK(out.find("d_qkvr") == std::string::npos);
    CHECK(out.find("constexpr int twice(int x) { return 2 * x; }\n") != std::string::npos);
    CHECK(out.find("__global__ void k(int* y) { y[0] = twice(3); }\n") != std::string::npos);
  }

  TEST_CASE("a one-line struct keeps its body: its host constructor goes, its device function stays") {
    // #56: the body was lost, and a kernel that checks it stored -1.0 where nvcc gives 1.0.
    const std::string src = "struct Acc { float v; Acc() { v = 0; } __device__ float get() const { return v + 1.0f; } };\n";
    const std::string out = left_out_text(src, {function_at(1, 23, "Acc")});
    CHECK(out.find("struct Acc { float v;") == 0);
    CHECK(out.find("__device__ float get() const { return v + 1.0f; } };") != std::string::npos);
    CHECK(out.find("v = 0") == std::string::npos);
  }

  TEST_CASE("a constructor with member initializers goes whole, braces in them too") {
    const std::string src = "struct Timer { float t; int u; Timer() : t(0), u{1} {} void start() { t = 1; } };\n";
    const std::string out = left_out_text(src, {function_at(1, 32, "Timer"), function_at(1, 61, "start")});
    CAPTURE(out);
    CHECK(out.find("struct Timer { float t; int u;") == 0);
    CHECK(out.find("Timer()") == std::string::npos);
    CHECK(out.find("start") == std::string::npos);
    CHECK(out.find("};") != std::string::npos);
  }

  TEST_CASE("a host function a macro makes goes as its invocation and the next kernel stays") {
    // #56: HOST_FN(bump) between two kernels took the next kernel with it, exit 0.
    const std::string src = "#define HOST_FN(name) int name(int v) { return v + 1; }\n"
                            "__global__ void k1(float* o) { o[0] = 1; }\n"
                            "HOST_FN(bump)\n"
                            "__global__ void k2(float* o) { o[0] = 2; }\n";
    const std::string out = left_out_text(src, {function_at(3, 1, "HOST_FN")});
    CHECK(out.find("HOST_FN(bump)") == std::string::npos);
    CHECK(out.find("__global__ void k2(float* o) { o[0] = 2; }") != std::string::npos);
    CHECK(out.find("#define HOST_FN(name)") == 0);
  }

  TEST_CASE("host code that holds device code is never left out") {
    const std::string src = "#define DEF(name) int name(int v) { return v; } __global__ void name##_k() {}\n"
                            "DEF(bump)\n";
    const auto context = kjit::compile::program_context({src});
    auto out = kjit::compile::leave_out_host_code(src, "k.cu", {function_at(2, 1, "DEF")}, context);
    REQUIRE(std::holds_alternative<std::string>(out));
    CHECK(std::get<std::string>(out).find("device code") != std::string::npos);
  }

  TEST_CASE("host variables of every shape go whole: arrays, static, extern, initialized, several at once") {
    const std::string src = "float fx = 1.0f;\ndim3 grid[3][2];\nstatic float* d_q;\nextern int counter;\nint a = 1, b = {2};\n"
                            "__device__ float on_device = 1.0f;\n";
    std::vector<HostDeclaration> found;
    for (auto [line, column, name] : std::vector<std::tuple<int, int, std::string>>{
             {1, 7, "fx"}, {2, 6, "grid"}, {3, 15, "d_q"}, {4, 12, "counter"}, {5, 5, "a"}, {5, 12, "b"}}) {
      HostDeclaration d = function_at(line, column, name);
      d.kind = HostDeclaration::Kind::variable;
      found.push_back(d);
    }
    const std::string out = left_out_text(src, found);
    CAPTURE(out);
    CHECK(out.find_first_not_of(" \n") == out.find("__device__ float on_device = 1.0f;"));
  }

  TEST_CASE("template kernels host code instantiates are named, as written and with their namespaces") {
    const std::string src = "namespace ops { template <int B> __global__ void k(float* o) { o[0] = B; } }\n"
                            "void run(float* o) { ops::k<128><<<1, 1>>>(o); }\n"
                            "namespace ops { void go(float* o) { k<64><<<1, 1>>>(o); } }\n";
    const auto context = kjit::compile::program_context({src});
    auto out = kjit::compile::leave_out_host_code(src, "k.cu", {function_at(2, 6, "run"), function_at(3, 22, "go")}, context);
    REQUIRE(std::holds_alternative<kjit::compile::HostCodeLeftOut>(out));
    const auto& left = std::get<kjit::compile::HostCodeLeftOut>(out).left_out;
    REQUIRE(left.size() == 2);
    const auto expressions = kjit::compile::instantiation_expressions(left, context);
    CHECK(std::find(expressions.begin(), expressions.end(), "ops::k<64>") != expressions.end());
    const std::string note = kjit::compile::explain_left_out(left, context, {});
    CHECK(note.find("host code left out: run (k.cu:2), go (k.cu:3)") != std::string::npos);
    CHECK(note.find("--instantiate 'ops::k<64>'") != std::string::npos);
  }
}

// #56's fixtures compiled whole by NVRTC (sm_90, no GPU): the kernels nvcc compiles are in the PTX,
// the device code around the host code is there, and the log names what was left out.
TEST_SUITE("host_functions (#56 fixtures compiled)") {
  TEST_CASE("fixture: a host function a macro makes between two kernels: both kernels kept, the log names it") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    const std::string src = "#define HOST_FN(name) int name(int v) { return v + 1; }\n"
                            "__global__ void first_kernel(float* o) { o[0] = 1; }\n"
                            "HOST_FN(bump)\n"
                            "__global__ void second_kernel(float* o) { o[0] = 2; }\n";
    kjit::CompileResult r;
    REQUIRE_NOTHROW(r = compile(rt, "macro.cu", src));
    CAPTURE(r.log);
    CHECK(r.ptx.find(".entry _Z12first_kernelPf(") != std::string::npos);
    CHECK(r.ptx.find(".entry _Z13second_kernelPf(") != std::string::npos);
    CHECK(r.log.find("host code left out:") != std::string::npos);
    CHECK(r.log.find("(macro.cu:3)") != std::string::npos);
  }

  TEST_CASE("fixture: a one-line struct with a host constructor keeps its device method (v + 1.0f in the PTX)") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    // nvcc: the kernel stores 1.0 for a zeroed Acc. The method's body must reach the PTX: 1.0f is 0f3F800000.
    const std::string src = "struct Acc { float v; Acc() { v = 0; } __device__ float get() const { return v + 1.0f; } };\n"
                            "__global__ void check(float* o, const Acc* a) { o[0] = a->get(); }\n";
    kjit::CompileResult r;
    REQUIRE_NOTHROW(r = compile(rt, "acc.cu", src));
    CAPTURE(r.log);
    CAPTURE(r.ptx);
    CHECK(r.ptx.find(".entry _Z5checkPfPK3Acc(") != std::string::npos);
    CHECK(r.ptx.find("0f3F800000") != std::string::npos);
    CHECK(r.log.find("Acc (acc.cu:1)") != std::string::npos);
  }

  TEST_CASE("fixture: a constructor with a member-initializer list goes, the class's device method stays") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    const std::string src = "struct Timer {\n  float t;\n  int u;\n  Timer() : t(0), u{1} {}\n"
                            "  __device__ float twice() const { return 2.0f * t + 3.0f; }\n};\n"
                            "__global__ void use(float* o, const Timer* t) { o[0] = t->twice(); }\n";
    kjit::CompileResult r;
    REQUIRE_NOTHROW(r = compile(rt, "timer.cu", src));
    CAPTURE(r.log);
    CHECK(r.ptx.find(".entry _Z3usePfPK5Timer(") != std::string::npos);
    CHECK(r.ptx.find("0f40400000") != std::string::npos);  // 3.0f: twice()'s body
    CHECK(r.log.find("Timer (timer.cu:4)") != std::string::npos);
  }

  TEST_CASE("fixture: namespace-scope host variables (array, static, extern, initialized) go, device ones stay") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    const std::string src = "float fx = 1.0f;\ndim3 grid[3][2];\nstatic float* d_qkvr;\nextern int counter;\n"
                            "int a = 1, b = {2};\n__device__ float on_device = 5.0f;\n"
                            "__global__ void k(float* o) { o[0] = on_device; }\n";
    kjit::CompileResult r;
    REQUIRE_NOTHROW(r = compile(rt, "vars.cu", src));
    CAPTURE(r.log);
    CHECK(r.ptx.find(".entry _Z1kPf(") != std::string::npos);
    CHECK(r.ptx.find("on_device") != std::string::npos);
    for (const char* name : {"fx (vars.cu:1)", "grid (vars.cu:2)", "d_qkvr (vars.cu:3)", "counter (vars.cu:4)", "a, b (vars.cu:5)"}) {
      CHECK_MESSAGE(r.log.find(name) != std::string::npos, name);
    }
  }

  TEST_CASE("fixture: programmatic dependent launch's device calls without an include, as under nvcc") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    const std::string src = "__global__ void primary(float* o) { o[threadIdx.x] = 1; cudaTriggerProgrammaticLaunchCompletion(); }\n"
                            "__global__ void secondary(float* o) { cudaGridDependencySynchronize(); o[threadIdx.x] += 1; }\n"
                            "int main() { cudaLaunchAttribute a[1]; a[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;"
                            " return 0; }\n";
    kjit::CompileResult r;
    REQUIRE_NOTHROW(r = compile(rt, "pdl.cu", src));
    CAPTURE(r.log);
    CHECK(r.ptx.find("griddepcontrol.wait") != std::string::npos);
    CHECK(r.ptx.find("griddepcontrol.launch_dependents") != std::string::npos);
    CHECK(r.log.find("main (pdl.cu:3)") != std::string::npos);
  }

  TEST_CASE("fixture: a user header on disk with <sys/syscall.h> and host functions beside a device helper") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    kjit::test::write_file(dir / "inc" / "common.h",
                           "#pragma once\n#include <sys/syscall.h>\n#include <unistd.h>\n#include <sys/time.h>\n"
                           "inline long thread_id() { return syscall(SYS_gettid); }\n"
                           "extern int verbose;\n"
                           "__device__ inline float square(float x) { return x * x + 7.0f; }\n");
    kjit::Program p("user.cu", "#include \"common.h\"\n__global__ void sq(float* o) { o[0] = square(o[0]); }\n"
                               "int main() { return thread_id() > 0 ? 0 : 1; }\n");
    kjit::CompileResult r;
    REQUIRE_NOTHROW(r = rt.compile(p, {.arch = kjit::Arch::sm(90), .flags = {"-I" + (dir / "inc").string()}}));
    CAPTURE(r.log);
    CHECK(r.ptx.find(".entry _Z2sqPf(") != std::string::npos);
    CHECK(r.ptx.find("0f40E00000") != std::string::npos);  // 7.0f: the header's device helper
    CHECK(r.log.find("thread_id") != std::string::npos);
    CHECK(r.log.find("main (user.cu:3)") != std::string::npos);
  }
}
