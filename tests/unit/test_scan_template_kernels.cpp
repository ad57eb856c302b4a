// compile::template_kernels and the hints built on it: the qualified names of the template
// kernels of random sources (named, nested, inline and anonymous namespaces, decoys in comments,
// strings and preprocessor lines), and what a compile says when a name expression lacks its
// namespace (item 3 of issue 40) or calls a device function no source defines (item 14). NVRTC,
// sm_90, no GPU needed.
#include <kjit/kjit.hpp>
#include <kjit/tools/inspect.hpp>

#include "core/compile/scan/template_kernels.hpp"

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

namespace {

struct Generated {
  std::string source;
  std::vector<std::string> kernels;  // qualified, in order
};

// A random source: template kernels at random namespace depths, between non-kernel templates,
// blocks and decoys that a scan must not take for code.
Generated random_source(unsigned seed) {
  std::mt19937 rng(seed);
  auto pick = [&rng](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  Generated g;
  std::vector<std::string> path;  // the namespaces open now ("" for an anonymous one)
  std::vector<int> opened;        // how many names each open brace closes
  int count = 0;
  auto qualified = [&path](const std::string& name) {
    std::string q;
    for (const auto& p : path) {
      if (!p.empty()) q += p + "::";
    }
    return q + name;
  };
  for (int step = 0; step < 40; ++step) {
    switch (pick(9)) {
      case 0: {
        const std::string name = "ns" + std::to_string(pick(50));
        g.source += "namespace " + name + " {\n";
        path.push_back(name);
        opened.push_back(1);
        break;
      }
      case 1: {
        const std::string a = "outer" + std::to_string(pick(9)), b = "inner" + std::to_string(pick(9));
        g.source += "namespace " + a + "::" + b + " {\n";
        path.push_back(a);
        path.push_back(b);
        opened.push_back(2);
        break;
      }
      case 2:
        g.source += pick(2) ? "namespace {\n" : "inline namespace v" + std::to_string(pick(3)) + " {\n";
        path.push_back(g.source.ends_with("namespace {\n") ? "" : g.source.substr(g.source.rfind("namespace ") + 10,
                                                                                  g.source.size() - g.source.rfind("namespace ") - 13));
        opened.push_back(1);
        break;
      case 3:
        if (!opened.empty()) {
          for (int k = 0; k < opened.back(); ++k) path.pop_back();
          opened.pop_back();
          g.source += "}  // namespace\n";
        }
        break;
      case 4: {
        const std::string name = "kernel" + std::to_string(count++);
        const char* heads[] = {"template <class T>\n__global__ void ", "template <typename T, int N = 4> __global__ void ",
                               "template <int B>\n__global__ void __launch_bounds__(B) ",
                               "template <class T>\nstatic __global__ void ",
                               "template <int M, int N>\n__global__ void __cluster_dims__(2, 1, 1) ",
                               "template <class T, int B = (3 > 2)> __global__ __launch_bounds__(B, 1) void __maxnreg__(64) "};
        g.source += std::string(heads[pick(6)]) + name + "(T* x) { if (x) { x[0] = T(); } }\n";
        g.kernels.push_back(qualified(name));
        break;
      }
      case 5:  // not kernels: a device template, a class template with a member, a plain kernel
        g.source += "template <class T> __device__ T twice(T v) { return v + v; }\n"
                    "template <class T> struct Box { template <class U> __device__ void put(U) {} };\n"
                    "__global__ void plain" + std::to_string(count++) + "(int* p) { *p = 1; }\n";
        break;
      case 6:  // decoys: a comment, a string and a directive holding a kernel and braces
        g.source += "// template <class T> __global__ void in_comment(T*) { }\n"
                    "/* } namespace trap { template <class T> __global__ void in_block(T*) {} */\n"
                    "__device__ const char* text() { return \"} template <class T> __global__ void s(T*) {\"; }\n"
                    "#define MAKE template <class T> __global__ void in_macro(T*) { \\\n  }\n";
        break;
      case 7:  // a block inside a function: templates there are not at namespace scope
        g.source += "__device__ int f" + std::to_string(count++) + "() { { int a = '}'; return a; } }\n";
        break;
      default:
        g.source += "struct S" + std::to_string(count++) + " { int a; };\n";
    }
  }
  while (!opened.empty()) {
    g.source += "}\n";
    opened.pop_back();
  }
  return g;
}

}  // namespace

TEST_SUITE("compile::template_kernels") {
  TEST_CASE("compile::template_kernels: random sources give each template kernel's qualified name") {
    for (unsigned seed = 1; seed <= 300; ++seed) {
      const Generated g = random_source(seed);
      CAPTURE(seed);
      CAPTURE(g.source);
      CHECK(kjit::compile::template_kernels(g.source) == g.kernels);
      CHECK(kjit::inspect::template_kernels(g.source) == g.kernels);
    }
  }

  TEST_CASE("compile::template_kernels: the shipped GELU is kjit::gelu") {
    const std::string source = "namespace kjit {\nstruct Op {};\ntemplate <class T, int BLOCK = 256, int UNROLL = 1>\n"
                               "__global__ void __launch_bounds__(BLOCK) gelu(const T* x, T* y, unsigned long long n) {}\n}\n";
    CHECK(kjit::compile::template_kernels(source) == std::vector<std::string>{"kjit::gelu"});
    CHECK(kjit::compile::template_kernels("").empty());
    // A Hopper GEMM's cluster kernel: the attribute between `void` and the name is not the name.
    CHECK(kjit::compile::template_kernels("template <int BM, int BN>\n__global__ void __cluster_dims__(2, 1, 1) "
                                          "__launch_bounds__(128) matmulKernel(int M, int N) {}") ==
          std::vector<std::string>{"matmulKernel"});
    CHECK(kjit::compile::template_kernels("template <class T> __global__ void").empty());
    CHECK(kjit::compile::template_kernels("namespace { namespace {").empty());
  }

  TEST_CASE("compile::template_kernels: a name expression without its namespace fails with the qualified one") {
    kjit::Runtime rt(kjit::RuntimeConfig{.cache_disabled = true, .log = [](kjit::LogLevel, std::string_view) {}});
    std::mt19937 rng(std::random_device{}());
    const std::string ns = "space" + std::to_string(rng() % 100000);
    const std::string source = "namespace " + ns + " {\ntemplate <class T, int N>\n__global__ void scale(T* x) { x[0] *= N; }\n}\n";
    const std::string args = "<float, " + std::to_string(rng() % 64 + 1) + ">";
    std::string log;
    try {
      (void)rt.compile(kjit::Program("scale.cu", source).instantiate("scale" + args), {.arch = kjit::Arch::sm(90)});
      FAIL("a name expression NVRTC cannot parse compiled");
    } catch (const kjit::CompileError& e) {
      log = e.log();
    }
    CAPTURE(log);
    CHECK(log.find("Error in parsing name expression") != std::string::npos);
    CHECK(log.find("name it \"" + ns + "::scale" + args + "\"") != std::string::npos);
    // Following the hint compiles.
    const kjit::CompileResult r =
        rt.compile(kjit::Program("scale.cu", source).instantiate(ns + "::scale" + args), {.arch = kjit::Arch::sm(90)});
    CHECK(r.lowered_name(ns + "::scale" + args).has_value());
  }

  TEST_CASE("compile::template_kernels: an extern device function no source defines points to -rdc=true and a link") {
    kjit::Runtime rt(kjit::RuntimeConfig{.cache_disabled = true, .log = [](kjit::LogLevel, std::string_view) {}});
    const std::string source = "__device__ float helper(float x);\n"
                               "__global__ void use(float* p) { p[threadIdx.x] = helper(p[threadIdx.x]); }\n";
    std::string log;
    try {
      (void)rt.compile(kjit::Program("use.cu", source), {.arch = kjit::Arch::sm(90)});
      FAIL("a call of an undefined extern function compiled to a cubin");
    } catch (const kjit::CompileError& e) {
      log = e.log();
    }
    CAPTURE(log);
    CHECK(log.find("Unresolved extern function '_Z6helperf'") != std::string::npos);
    CHECK(log.find("-rdc=true") != std::string::npos);
    CHECK(log.find("--link") != std::string::npos);
    CHECK(log.find("kjit::Link") != std::string::npos);
  }
}
