// kjit::Runtime without a GPU: compiling to PTX and cubin for a named arch, name expressions,
// errors, the driver-absent error, threads, the disk cache on the request path.
#include <kjit/tools.hpp>

#include "core/runtime_access.hpp"

#include "support/temp_dir.hpp"
#include "support/skip.hpp"

#include <doctest/doctest.h>

#include <algorithm>

#include <atomic>
#include <random>
#include <thread>

namespace {

const char* k_square = R"(
extern "C" __global__ void square(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * x[i];
}
)";

const char* k_template = R"(
template <typename T>
__global__ void scale(T* x, T a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
)";

kjit::RuntimeConfig config_in(const kjit::test::TempDir& dir) {
  kjit::RuntimeConfig c;
  c.cache_dir = dir.path() / "cache";
  c.log = [](kjit::LogLevel, std::string_view) {};
  return c;
}

}  // namespace

TEST_SUITE("Runtime") {
  TEST_CASE("compiles to PTX for a virtual arch and to cubin plus PTX for a real one and without a GPU") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(config_in(dir));
    auto ptx_only = rt.compile(kjit::Program("square.cu", k_square), {.arch = kjit::Arch::compute(90)});
    CHECK(ptx_only.ptx.find(".entry square") != std::string::npos);
    CHECK(ptx_only.ptx.find(".target sm_90") != std::string::npos);
    CHECK_FALSE(ptx_only.has_cubin());

    auto real = rt.compile(kjit::Program("square.cu", k_square), {.arch = kjit::Arch::sm(90)});
    REQUIRE(real.has_cubin());
    CHECK(real.cubin.substr(0, 4) == "\x7f" "ELF");
    CHECK(real.ptx.find("mul.f32") != std::string::npos);
    CHECK(real.outcome == kjit::Outcome::compiled);
    CHECK(real.key.size() == 32);
    CHECK(real.compile_ms > 0);
  }

  TEST_CASE("the toolkit headers are found: cuda_fp16 and cuda_bf16 and cuda/std and cub") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(config_in(dir));
    const char* src = R"(
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda/std/limits>
#include <cub/warp/warp_reduce.cuh>
extern "C" __global__ void k(__half* h, __nv_bfloat16* b, float* out) {
  out[0] = __half2float(h[0]) + __bfloat162float(b[0]) + cuda::std::numeric_limits<float>::max();
}
)";
    auto r = rt.compile(kjit::Program("headers.cu", src), {.arch = kjit::Arch::sm(90)});
    CHECK(r.has_cubin());
  }

  TEST_CASE("name expressions instantiate templates and keep their lowered names") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(config_in(dir));
    auto r = rt.compile(kjit::Program("scale.cu", k_template).instantiate("scale<float>").instantiate("scale<double>"),
                        {.arch = kjit::Arch::sm(90)});
    auto f = r.lowered_name("scale<float>");
    auto d = r.lowered_name("scale<double>");
    REQUIRE(f);
    REQUIRE(d);
    CHECK(*f != *d);
    CHECK(r.ptx.find(*f) != std::string::npos);
    CHECK(r.ptx.find(*d) != std::string::npos);
    CHECK_FALSE(r.lowered_name("scale<int>"));
    // The lowered names survive the disk cache.
    auto again = rt.compile(kjit::Program("scale.cu", k_template).instantiate("scale<float>").instantiate("scale<double>"),
                            {.arch = kjit::Arch::sm(90)});
    CHECK(again.outcome == kjit::Outcome::hit);
    CHECK(again.lowered_name("scale<float>") == f);
  }

  TEST_CASE("a syntax error throws CompileError with the program and options and log and numbered source lines") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(config_in(dir));
    const char* src = "extern \"C\" __global__ void bad(float* x) {\n  int i = threadIdx.x;\n  x[i] = y + 1;\n}\n";
    try {
      rt.compile(kjit::Program("bad.cu", src), {.arch = kjit::Arch::sm(90), .defines = {"WHY=1"}});
      FAIL("no CompileError");
    } catch (const kjit::CompileError& e) {
      std::string what = e.what();
      CHECK(e.program() == "bad.cu");
      CHECK(e.log().find("identifier \"y\" is undefined") != std::string::npos);
      CHECK(e.excerpt().find(">    3 |   x[i] = y + 1;") != std::string::npos);
      CHECK(e.excerpt().find("     2 |   int i = threadIdx.x;") != std::string::npos);
      CHECK(what.find("bad.cu") != std::string::npos);
      CHECK(what.find("--define-macro=WHY=1") != std::string::npos);
      CHECK(what.find("x[i] = y + 1;") != std::string::npos);
    }
  }

  TEST_CASE("an arch NVRTC does not support is refused with the supported list") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(config_in(dir));
    CHECK_THROWS_WITH_AS(rt.compile(kjit::Program("s.cu", k_square), {.arch = kjit::Arch::sm(50)}),
                         doctest::Contains("supported: sm_75"), kjit::UsageError);
    CHECK_THROWS_WITH_AS(rt.compile(kjit::Program("s.cu", k_square), {.arch = kjit::Arch::sm(91)}),
                         doctest::Contains("sm_90"), kjit::UsageError);
  }

  TEST_CASE("without a driver and GPU features say so and point at the compile-only features") {
    if (kjit::driver_available()) {
      KJIT_SKIP("a driver is present; the driver-absent case is not testable here");
    }
    kjit::test::TempDir dir;
    kjit::Runtime rt(config_in(dir));
    CHECK(kjit::device_count() == 0);
    CHECK_THROWS_WITH_AS(kjit::Device::current(), doctest::Contains("no CUDA driver found: dlopen failed: libcuda.so.1: "),
                         kjit::DriverNotFoundError);
    CHECK_THROWS_WITH_AS(rt.load(kjit::Program("s.cu", k_square)), doctest::Contains("compile-only features"),
                         kjit::DriverNotFoundError);
    CHECK_THROWS_AS(rt.compile(kjit::Program("s.cu", k_square), {}), kjit::DriverNotFoundError);  // native arch
    CHECK_THROWS_AS(kjit::DeviceBuffer<float>(16), kjit::DriverNotFoundError);
  }

  TEST_CASE("compiling from several threads at once works and compiles each key once") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(config_in(dir));
    constexpr int k_threads = 8;
    std::vector<std::thread> threads;
    std::atomic<int> ok{0};
    std::vector<std::string> keys(k_threads);
    for (int t = 0; t < k_threads; ++t) {
      threads.emplace_back([&, t] {
        // Two distinct programs, each requested by four threads.
        std::string src = std::string(k_square) + "// variant " + std::to_string(t % 2) + "\n";
        auto r = rt.compile(kjit::Program("square.cu", src), {.arch = kjit::Arch::sm(90)});
        keys[static_cast<std::size_t>(t)] = r.key;
        if (r.has_cubin()) ++ok;
      });
    }
    for (auto& t : threads) t.join();
    CHECK(ok == k_threads);
    CHECK(rt.stats().compiles == 2);
    for (int t = 2; t < k_threads; ++t) CHECK(keys[static_cast<std::size_t>(t)] == keys[static_cast<std::size_t>(t % 2)]);
    CHECK(keys[0] != keys[1]);
  }

  TEST_CASE("the disk cache serves a second Runtime (a second process's view) and honours disable/always-compile") {
    kjit::test::TempDir dir;
    auto c = config_in(dir);
    kjit::Program p("square.cu", k_square);
    kjit::CompileOptions o{.arch = kjit::Arch::sm(90)};
    auto first = kjit::Runtime(c).compile(p, o);
    CHECK(first.outcome == kjit::Outcome::compiled);
    auto second = kjit::Runtime(c).compile(p, o);
    CHECK(second.outcome == kjit::Outcome::hit);
    CHECK(second.cubin == first.cubin);
    CHECK(second.ptx == first.ptx);
    CHECK(second.key == first.key);
    // The hit builds its result from the entry read in place: every part survives.
    CHECK(second.log == first.log);
    CHECK(second.options == first.options);
    CHECK(second.lowered_names == first.lowered_names);
    CHECK(second.program_name == first.program_name);
    CHECK(second.arch == first.arch);

    auto always = c;
    always.always_compile = true;
    CHECK(kjit::Runtime(always).compile(p, o).outcome == kjit::Outcome::compiled);

    auto disabled = c;
    disabled.cache_disabled = true;
    disabled.cache_dir = dir.path() / "never";
    CHECK(kjit::Runtime(disabled).compile(p, o).outcome == kjit::Outcome::compiled);
    CHECK_FALSE(std::filesystem::exists(dir.path() / "never"));
  }
}

TEST_SUITE("Runtime") {
  TEST_CASE("without the tools a dump directory gets nothing and the Runtime says why once") {
    // libkjit writes no dumps: libkjit_tools' writer does, once install_tools() gave it to the core.
    kjit::test::TempDir dir;
    auto c = config_in(dir);
    c.dump_dir = dir.path() / "dumps";
    std::vector<std::string> warnings;
    c.log_level = kjit::LogLevel::warn;
    c.log = [&](kjit::LogLevel level, std::string_view m) {
      if (level == kjit::LogLevel::warn) warnings.emplace_back(m);
    };
    kjit::Runtime rt(c);
    (void)rt.compile(kjit::Program("square.cu", k_square), {.arch = kjit::Arch::sm(90)});
    (void)rt.compile(kjit::Program("square2.cu", std::string(k_square) + "\n"), {.arch = kjit::Arch::sm(90)});
    CHECK_FALSE(std::filesystem::exists(c.dump_dir));
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("nothing in this program writes dumps") != std::string::npos);
    CHECK(warnings[0].find("install_tools") != std::string::npos);
  }

  TEST_CASE("a dump directory receives a folder per compile and per hit only when asked") {
    kjit::install_tools();
    kjit::test::TempDir dir;
    auto c = config_in(dir);
    c.dump_dir = dir.path() / "dumps";
    kjit::Program p("square.cu", k_square);
    auto r = kjit::Runtime(c).compile(p, {.arch = kjit::Arch::sm(90)});
    bool found = false;
    for (const auto& e : std::filesystem::directory_iterator(c.dump_dir)) {
      found = true;
      CHECK(std::filesystem::exists(e.path() / "kernel.ptx"));
      CHECK(kjit::test::read_file(e.path() / "kernel.ptx") == r.ptx);
      std::filesystem::remove_all(e.path());
    }
    CHECK(found);
    // A hit: not dumped, and said once (#40 item 16: "a cache hit writes nothing without a hint").
    std::vector<std::string> warnings;
    c.log = [&warnings](kjit::LogLevel level, std::string_view m) {
      if (level == kjit::LogLevel::warn) warnings.emplace_back(m);
    };
    {
      kjit::Runtime rt(c);
      rt.compile(p, {.arch = kjit::Arch::sm(90)});
      rt.compile(p, {.arch = kjit::Arch::sm(90)});
      rt.compile(kjit::Program("dir/square.cu", k_square), {.arch = kjit::Arch::sm(90)});  // one key
    }
    CHECK(std::filesystem::is_empty(c.dump_dir));
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("square.cu") != std::string::npos);
    CHECK(warnings[0].find("KJIT_ALWAYS_COMPILE=1") != std::string::npos);
    c.log = [](kjit::LogLevel, std::string_view) {};
    c.dump_hits = true;
    kjit::Runtime(c).compile(p, {.arch = kjit::Arch::sm(90)});
    CHECK_FALSE(std::filesystem::is_empty(c.dump_dir));
  }
}

TEST_SUITE("Runtime") {
  TEST_CASE("a request's options are normalized once: each dropped flag warned once by compile link and explain") {
    kjit::test::TempDir dir;
    std::vector<std::string> warnings;
    kjit::RuntimeConfig c;
    c.cache_dir = dir.path();
    c.log_level = kjit::LogLevel::warn;
    c.log = [&](kjit::LogLevel level, std::string_view m) {
      if (level == kjit::LogLevel::warn) warnings.emplace_back(m);
    };
    kjit::Runtime rt(c);
    const kjit::CompileOptions o{.arch = kjit::Arch::sm(90), .flags = {"-g", "-O0", "-g"}};
    const auto dropped = [&](const char* flag) {
      return std::count_if(warnings.begin(), warnings.end(), [&](const std::string& w) {
        return w.find(std::string("dropping compile flag \"") + flag + "\"") != std::string::npos;
      });
    };
    rt.compile(kjit::Program("square.cu", k_square), o);
    CHECK(warnings.size() == 2);
    CHECK(dropped("-g") == 1);
    CHECK(dropped("-O0") == 1);
    warnings.clear();
    rt.explain(kjit::Program("square.cu", k_square), o);
    CHECK(warnings.size() == 2);
    warnings.clear();
    // A link of two programs: its parts are requests of their own, made from the link's options
    // normalized once; nothing below warns again.
    kjit::Link link("pair");
    link.add(kjit::Program("a.cu", "__device__ float twice(float v) { return 2.0f * v; }\n"));
    link.add(kjit::Program("b.cu", "extern __device__ float twice(float v);\n"
                                   "extern \"C\" __global__ void k(float* x) { x[0] = twice(x[0]); }\n"));
    const kjit::CompileResult linked = rt.link(link, o);
    CHECK(linked.has_cubin());
    CHECK(warnings.size() == 2);
    CHECK(dropped("-g") == 1);
  }

  TEST_CASE("report reaches the log callback whatever the level and log output below the level does not") {
    kjit::test::TempDir dir;
    std::vector<std::string> seen;
    kjit::RuntimeConfig c;
    c.cache_dir = dir.path();
    c.log_level = kjit::LogLevel::error;
    c.log = [&](kjit::LogLevel level, std::string_view m) {
      CHECK(level == kjit::LogLevel::info);
      seen.emplace_back(m);
    };
    kjit::Runtime rt(c);
    rt.compile(kjit::Program("square.cu", k_square), {.arch = kjit::Arch::sm(90)});  // info messages only
    CHECK(seen.empty());
    kjit::RuntimeAccess::report(rt, "asked for");
    REQUIRE(seen.size() == 1);
    CHECK(seen[0] == "asked for");
  }
}
