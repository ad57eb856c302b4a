// nvcc's flags in kjit (runtime/compile/nvcc_flags, read by normalized()): each translated to its
// NVRTC spelling with one cache key for both, the compiles they change checked with the real
// NVRTC for sm_90, host-only flags dropped with one warning each, unknown flags refused.
#include <kjit/kjit.hpp>
#include <kjit/error.hpp>

#include "core/compile/options/nvcc_flags.hpp"
#include "core/compile/options/option_marshalling.hpp"
#include "support/helpers.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

using kjit::Arch;
using kjit::CompileOptions;

namespace {

const char* k_plain = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] = x[threadIdx.x] / 3.0f; }\n";

std::vector<std::string> flags_of(std::vector<std::string> raw) {
  CompileOptions o{.arch = Arch::sm(90), .flags = std::move(raw)};
  return kjit::canonical_flags(o, kjit::normalized(o).arch);
}

// A Runtime on a fresh cache folder that keeps what it logs.
struct Fixture {
  kjit::test::TempDir dir;
  std::vector<std::string> warnings;
  kjit::Runtime rt{config()};

  kjit::RuntimeConfig config() {
    kjit::RuntimeConfig c;
    c.cache_dir = dir.path() / "cache";
    c.log_level = kjit::LogLevel::warn;
    c.log = [this](kjit::LogLevel level, std::string_view m) {
      if (level == kjit::LogLevel::warn) warnings.emplace_back(m);
    };
    return c;
  }

  // `arch`: the typed arch; native where the flags name one (a typed arch they disagree with is refused).
  std::string key(const std::vector<std::string>& flags, const char* source = k_plain, Arch arch = Arch::sm(90)) {
    return rt.explain(kjit::Program("k.cu", source), CompileOptions{.arch = arch, .flags = flags}).key;
  }

  kjit::CompileResult compile(const std::vector<std::string>& flags, const char* source = k_plain,
                              Arch arch = Arch::sm(90)) {
    return rt.compile(kjit::Program("k.cu", source), CompileOptions{.arch = arch, .flags = flags});
  }
};

// The nvcc spelling and the NVRTC spelling give one marshalled list and one real cache key.
void check_same_as(Fixture& fx, const std::vector<std::string>& nvcc, const std::vector<std::string>& nvrtc) {
  INFO("nvcc: " << (nvcc.empty() ? "" : nvcc.front()) << "  nvrtc: " << (nvrtc.empty() ? "" : nvrtc.front()));
  CHECK(flags_of(nvcc) == flags_of(nvrtc));
  CHECK(fx.key(nvcc) == fx.key(nvrtc));
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

TEST_SUITE("NvccFlags") {
  TEST_CASE("--expt-relaxed-constexpr becomes -Xcudafe=--relaxed_constexpr and compiles constexpr host calls") {
    Fixture fx;
    CHECK(contains(flags_of({"--expt-relaxed-constexpr"}), "-Xcudafe=--relaxed_constexpr"));
    check_same_as(fx, {"--expt-relaxed-constexpr"}, {"-Xcudafe=--relaxed_constexpr"});
    check_same_as(fx, {"-expt-relaxed-constexpr"}, {"-Xcudafe", "--relaxed_constexpr"});
    // A constexpr function of a system header (as libstdc++'s std::max is under nvcc), called
    // from device code: without the flag ptxas finds no device version of it.
    const char* source = "#include \"sys_math.h\"\n"
                         "extern \"C\" __global__ void k(float* x) { x[0] = twice(x[0]); }\n";
    kjit::Program p = kjit::Program("k.cu", source)
                          .header("sys_math.h", "# 1 \"/usr/include/sys_math.h\" 3\n"
                                                "constexpr float twice(float v) { return 2 * v; }\n");
    CompileOptions o{.arch = Arch::sm(90), .flags = {"--expt-relaxed-constexpr"}};
    kjit::CompileResult r = fx.rt.compile(p, o);
    CHECK(r.has_cubin());
    CHECK_THROWS_AS(fx.rt.compile(p, CompileOptions{.arch = Arch::sm(90)}), kjit::CompileError);
  }

  TEST_CASE("--extended-lambda and --expt-extended-lambda become -Xcudafe=--extended-lambda and compile a device lambda") {
    Fixture fx;
    for (std::string f : {"--extended-lambda", "-extended-lambda", "--expt-extended-lambda", "-expt-extended-lambda"}) {
      CHECK(contains(flags_of({f}), "-Xcudafe=--extended-lambda"));
      check_same_as(fx, {f}, {"-Xcudafe=--extended-lambda"});
    }
    const char* source = "template <typename F> __device__ float apply(F f, float v) { return f(v); }\n"
                         "extern \"C\" __global__ void k(float* x) {\n"
                         "  auto twice = [] __device__ (float v) { return 2 * v; };\n"
                         "  x[threadIdx.x] = apply(twice, x[threadIdx.x]);\n}\n";
    CHECK(fx.compile({"--extended-lambda"}, source).has_cubin());
    CHECK_THROWS_WITH_AS(fx.compile({}, source), doctest::Contains("--extended-lambda"), kjit::CompileError);
  }

  TEST_CASE("-gencode and -arch and --gpu-architecture set the arch in every spelling") {
    Fixture fx;
    auto arch_of = [](std::vector<std::string> raw) { return kjit::normalized(CompileOptions{.flags = raw}).arch; };
    CHECK(arch_of({"-gencode", "arch=compute_90,code=sm_90"}) == Arch::sm(90));
    CHECK(arch_of({"-gencode=arch=compute_90,code=sm_90"}) == Arch::sm(90));
    CHECK(arch_of({"--generate-code", "arch=compute_80,code=[sm_80,compute_80]"}) == Arch::sm(80));
    CHECK(arch_of({"--generate-code=arch=compute_90,code=\"sm_90,compute_90\""}) == Arch::sm(90));
    CHECK(arch_of({"-gencode", "arch=compute_90,code=compute_90"}) == Arch::compute(90));
    CHECK(arch_of({"-gencode", "arch=compute_90a,code=sm_90a"}).str() == "sm_90a");
    CHECK(arch_of({"-arch=sm_86"}) == Arch::sm(86));
    CHECK(arch_of({"-arch", "sm_86"}) == Arch::sm(86));
    CHECK(arch_of({"--gpu-architecture", "compute_80"}) == Arch::compute(80));
    CHECK(arch_of({"-arch=compute_80", "-code=sm_90"}) == Arch::sm(90));  // -code replaces -arch's targets
    CHECK(arch_of({"-arch=sm_90", "-gencode", "arch=compute_90,code=compute_90"}) == Arch::sm(90));
    CHECK(arch_of({"-arch=native"}).is_native());
    // code=lto_90: LTO-IR for sm_90, as -dlto.
    CHECK(arch_of({"-gencode", "arch=compute_90,code=lto_90"}) == Arch::sm(90));
    CHECK(contains(flags_of({"-gencode", "arch=compute_90,code=lto_90"}), "-dlto"));
    // One key: the gencode spelling and the NVRTC spelling of the arch.
    CHECK(flags_of({"-gencode", "arch=compute_90,code=sm_90"}) == flags_of({"--gpu-architecture=sm_90"}));
    CHECK(fx.key({"-gencode", "arch=compute_80,code=sm_80"}, k_plain, Arch::native()) ==
          fx.key({"--gpu-architecture=sm_80"}, k_plain, Arch::native()));
    CHECK(fx.key({"-gencode", "arch=compute_80,code=sm_80"}, k_plain, Arch::native()) != fx.key({}));
    // A compile really is for that arch.
    CHECK(fx.compile({"-gencode", "arch=compute_80,code=sm_80"}, k_plain, Arch::native()).arch == Arch::sm(80));
    // #40 item 8: a typed arch (kjit's --arch) and flags that disagree are refused, naming both.
    CHECK_THROWS_WITH_AS(fx.compile({"-gencode", "arch=compute_80,code=sm_80"}), doctest::Contains("sm_90"),
                         kjit::UsageError);
    CHECK_THROWS_WITH_AS(kjit::normalized(CompileOptions{.arch = Arch::sm(90), .flags = {"-arch", "sm_80"}}),
                         doctest::Contains("\"-arch sm_80\" asks for sm_80"), kjit::UsageError);
    CHECK(kjit::normalized(CompileOptions{.arch = Arch::sm(90), .flags = {"-arch=compute_90"}}).arch == Arch::sm(90));
    CHECK(kjit::normalized(CompileOptions{.arch = Arch::compute(90), .flags = {"-arch=sm_90"}}).arch == Arch::sm(90));
    CHECK_THROWS_WITH_AS(arch_of({"-gencode", "arch=compute_90,code=sm90"}), doctest::Contains("sm90"),
                         kjit::UsageError);
    CHECK_THROWS_AS(arch_of({"-gencode", "compute_90"}), kjit::UsageError);
  }

  TEST_CASE("two different archs are refused saying to compile once per arch or to use kjit warm --arch") {
    auto refusal = [](std::vector<std::string> raw) {
      try {
        kjit::normalized(CompileOptions{.flags = raw});
      } catch (const kjit::UsageError& e) {
        return std::string(e.what());
      }
      return std::string("(accepted)");
    };
    const std::string two = refusal({"-gencode", "arch=compute_80,code=sm_80", "-gencode=arch=compute_90,code=sm_90"});
    CHECK(two.find("2 archs") != std::string::npos);
    CHECK(two.find("sm_80 (\"-gencode arch=compute_80,code=sm_80\")") != std::string::npos);
    CHECK(two.find("sm_90 (\"-gencode=arch=compute_90,code=sm_90\")") != std::string::npos);
    CHECK(two.find("compile once per arch (--arch sm_80, then --arch sm_90)") != std::string::npos);
    CHECK(two.find("kjit warm --arch sm_80,sm_90") != std::string::npos);
    CHECK(refusal({"-gencode", "arch=compute_80,code=[sm_80,sm_90]"}).find("kjit warm --arch sm_80,sm_90") !=
          std::string::npos);
    CHECK(refusal({"-arch=sm_80", "-gencode", "arch=compute_90,code=sm_90"}).find("2 archs") != std::string::npos);
    CHECK(refusal({"-arch=all"}).find("kjit warm --arch") != std::string::npos);
    CHECK(refusal({"-arch=all-major"}).find("once per arch") != std::string::npos);
  }

  TEST_CASE("-res-usage and -Xptxas -v ask for the resource report with one key") {
    Fixture fx;
    CHECK(contains(flags_of({"-res-usage"}), "--ptxas-options=-v"));
    for (std::vector<std::string> spelling : std::vector<std::vector<std::string>>{
             {"--resource-usage"}, {"-Xptxas", "-v"}, {"-Xptxas=-v"}, {"-Xptxas", "--verbose"}, {"--ptxas-options=-v"}}) {
      check_same_as(fx, {"-res-usage"}, spelling);
    }
    // nvcc splits -Xptxas at commas; NVRTC would hand "-v,-warn-spills" to ptxas whole.
    auto split = flags_of({"-Xptxas", "-v,-warn-spills"});
    CHECK(contains(split, "--ptxas-options=-v"));
    CHECK(contains(split, "--ptxas-options=-warn-spills"));
    kjit::CompileResult r = fx.compile({"-res-usage"});
    CHECK(r.log.find("Used ") != std::string::npos);
    CHECK(r.log.find("registers") != std::string::npos);
    CHECK(fx.compile({"-Xptxas", "-v,-warn-spills"}).has_cubin());
  }

  TEST_CASE("-G -lineinfo -g and -O0 to -O3 do to device code what nvcc does") {
    Fixture fx;
    CHECK(kjit::normalized(CompileOptions{.flags = {"-G"}}).device_debug);
    CHECK(kjit::normalized(CompileOptions{.flags = {"-lineinfo"}}).line_info);
    check_same_as(fx, {"-G"}, {"--device-debug"});
    check_same_as(fx, {"-lineinfo"}, {"--generate-line-info"});
    // -g and -O are host options under nvcc: device code as without them, one key.
    for (std::vector<std::string> host : std::vector<std::vector<std::string>>{
             {"-g"}, {"--debug"}, {"-O0"}, {"-O1"}, {"-O2"}, {"-O3"}, {"-O"}, {"--optimize", "2"}, {"--optimize=0"}}) {
      CHECK(flags_of(host) == flags_of({}));
      CHECK(fx.key(host) == fx.key({}));
    }
    // -g and -O0 say what they did not do (and what would); -O1..-O3 are what device code gets anyway.
    fx.warnings.clear();
    fx.compile({"-O0", "-g", "-O3", "-O2"});
    std::string all;
    for (const auto& w : fx.warnings) all += w + "\n";
    REQUIRE_MESSAGE(fx.warnings.size() == 2, all);
    CHECK(fx.warnings[0].find("\"-O0\"") != std::string::npos);
    CHECK(fx.warnings[0].find("device code stays optimized") != std::string::npos);
    CHECK(fx.warnings[0].find("-G (--device-debug)") != std::string::npos);
    CHECK(fx.warnings[1].find("\"-g\"") != std::string::npos);
    CHECK(fx.warnings[1].find("use -G") != std::string::npos);
    CHECK(fx.compile({"-G"}).has_cubin());
    CHECK_THROWS_AS(flags_of({"-O7"}), kjit::UsageError);
    CHECK_THROWS_AS(flags_of({"--optimize=fast"}), kjit::UsageError);
  }

  TEST_CASE("-ftz -prec-div -prec-sqrt and -fmad in nvcc's spellings become NVRTC's") {
    Fixture fx;
    CHECK(contains(flags_of({"-ftz=true"}), "--ftz=true"));
    check_same_as(fx, {"-ftz=true"}, {"--ftz=true"});
    check_same_as(fx, {"--ftz", "true"}, {"--ftz=true"});
    check_same_as(fx, {"-ftz", "true"}, {"--ftz=true"});
    check_same_as(fx, {"-prec-div=false"}, {"--prec-div=false"});
    check_same_as(fx, {"--prec-div", "false"}, {"--prec-div=false"});
    check_same_as(fx, {"-prec-sqrt=false"}, {"--prec-sqrt=false"});
    check_same_as(fx, {"-fmad=false"}, {"--fmad=false"});
    check_same_as(fx, {"--fmad", "false"}, {"--fmad=false"});
    CHECK(fx.key({"-ftz=true"}) != fx.key({"-ftz=false"}));
    CHECK(fx.key({"-ftz=true"}) != fx.key({}));
    CHECK_THROWS_WITH_AS(flags_of({"-ftz"}), doctest::Contains("\"-ftz\": it needs a value"), kjit::UsageError);
    CHECK_THROWS_WITH_AS(flags_of({"-ftz=1"}), doctest::Contains("true or false"), kjit::UsageError);
    // NVRTC takes them: the division is no longer IEEE round-to-nearest, and flushes to zero.
    const char* division = "extern \"C\" __global__ void k(float* x) { x[0] = x[1] / x[2]; }\n";
    const std::string fast = fx.compile({"-ftz=true", "-prec-div=false", "-prec-sqrt=false", "-fmad=true"}, division).ptx;
    const std::string exact = fx.compile({}, division).ptx;
    CHECK(exact.find("div.rn.f32") != std::string::npos);
    CHECK(fast.find("div.rn.f32") == std::string::npos);
    CHECK(fast.find(".ftz.f32") != std::string::npos);
  }

  TEST_CASE("-rdc=true and -dc give relocatable device code with one key") {
    Fixture fx;
    CHECK(contains(flags_of({"-dc"}), "-rdc=true"));
    for (std::vector<std::string> spelling : std::vector<std::vector<std::string>>{
             {"-dc"}, {"--device-c"}, {"-rdc", "true"}, {"--relocatable-device-code=true"}, {"--relocatable-device-code", "true"}}) {
      check_same_as(fx, spelling, {"-rdc=true"});
    }
    CHECK(flags_of({"-rdc=false"}) == flags_of({}));
    const char* source = "extern __device__ float helper(float);\n"
                         "extern \"C\" __global__ void k(float* x) { x[0] = helper(x[0]); }\n";
    CHECK(fx.compile({"-dc"}, source).has_cubin());  // an extern device function needs -rdc
    CHECK_THROWS_AS(fx.compile({}, source), kjit::CompileError);
  }

  TEST_CASE("host-only flags are dropped with one warning each through the log callback") {
    Fixture fx;
    const std::vector<std::string> host = {"-Xcompiler", "-fPIC", "-Xcompiler=-Wall,-O2", "-Wall", "-Wextra",
                                           "--default-stream", "per-thread", "-ccbin", "g++-12", "-lcublas",
                                           "-L/usr/local/cuda/lib64", "-m64", "-Wall", "-Werror", "all-warnings",
                                           "-Wno-deprecated-gpu-targets"};
    std::vector<std::string> with = host;
    with.push_back("--use_fast_math");
    CHECK(flags_of(with) == flags_of({"--use_fast_math"}));
    CHECK(fx.key(with) == fx.key({"--use_fast_math"}));
    fx.warnings.clear();
    kjit::CompileResult r = fx.compile(with);
    CHECK(r.has_cubin());
    const std::vector<std::string> expected = {"\"-Xcompiler -fPIC\"", "\"-Xcompiler=-Wall,-O2\"", "\"-Wall\"",
                                               "\"-Wextra\"", "\"--default-stream per-thread\"", "\"-ccbin g++-12\"",
                                               "\"-lcublas\"", "\"-L/usr/local/cuda/lib64\"", "\"-m64\"",
                                               "\"-Werror all-warnings\"", "\"-Wno-deprecated-gpu-targets\""};
    REQUIRE(fx.warnings.size() == expected.size());  // -Wall twice: one warning
    for (std::size_t i = 0; i < expected.size(); ++i) {
      CHECK(fx.warnings[i].find(expected[i]) != std::string::npos);
      CHECK(fx.warnings[i].find("dropping compile flag") == 0);
    }
    CHECK(fx.warnings[0].find("host compiler") != std::string::npos);
    // A link normalizes its options twice on the way down (the facade, then each part): one
    // warning still.
    fx.warnings.clear();
    kjit::Link link("linked");
    link.add(kjit::Program("k.cu", k_plain));
    fx.rt.link(link, CompileOptions{.arch = Arch::sm(90), .flags = {"-Xcompiler", "-fPIC"}});
    CHECK(fx.warnings.size() == 1);
    // The next request warns again, once.
    fx.warnings.clear();
    fx.compile(with);
    CHECK(fx.warnings.size() == expected.size());
  }

  TEST_CASE("an unknown flag is refused naming it and the closest option") {
    auto refusal = [](std::vector<std::string> raw) {
      try {
        flags_of(raw);
      } catch (const kjit::UsageError& e) {
        return std::string(e.what());
      }
      return std::string("(accepted)");
    };
    const std::string typo = refusal({"--expt-relaxed-constexp"});
    CHECK(typo.find("\"--expt-relaxed-constexp\"") != std::string::npos);
    CHECK(typo.find("neither NVRTC nor nvcc has it") != std::string::npos);
    CHECK(typo.find("the closest option is --expt-relaxed-constexpr") != std::string::npos);
    CHECK(refusal({"--extra-device-vectorisation"}).find("closest option is --extra-device-vectorization") !=
          std::string::npos);
    CHECK(refusal({"--fast-math"}).find("closest option is --use_fast_math") != std::string::npos);
    CHECK(refusal({"-maxregcount=32"}).find("closest option is --maxrregcount (-maxrregcount)") != std::string::npos);
    CHECK(refusal({"-fPIC"}).find("\"-fPIC\"") != std::string::npos);
    // A stray value (its flag spelled wrong) is refused too, not handed to NVRTC.
    CHECK(refusal({"per-thread"}).find("is not a flag") != std::string::npos);
    CHECK(kjit::compile::closest_option("-default-devise") == "--device-as-default-execution-space (-default-device)");
  }

  TEST_CASE("NVRTC options kjit does not model pass through unchanged and NVRTC takes them") {
    Fixture fx;
    const std::vector<std::string> passed = {"--extra-device-vectorization", "-default-device", "--device-int128",
                                             "-split-compile=2", "--diag-suppress=177", "-dopt=on", "-ewp",
                                             "-Xnvvm=-opt=3", "-w", "-DX=1"};
    auto flags = flags_of(passed);
    for (const auto& f : passed) {
      if (f == "-DX=1") continue;
      CHECK_MESSAGE(contains(flags, f), f);
    }
    // Two arguments become one (NVRTC takes "--time=f" only), and a name with nvcc's dashes
    // becomes NVRTC's.
    CHECK(contains(flags_of({"-dopt", "on"}), "-dopt=on"));
    CHECK(contains(flags_of({"--optimization-info", "inline"}), "--optimization-info=inline"));
    CHECK(contains(flags_of({"-dlink-time-opt"}), "-dlto"));
    CHECK(contains(flags_of({"-Ofast-compile=max"}), "--Ofast-compile=max"));
    CHECK(contains(flags_of({"-Xcudafe", "--diag_suppress=177"}), "-Xcudafe=--diag_suppress=177"));
    CHECK(fx.compile(passed).has_cubin());
    CHECK(fx.compile({"-Ofast-compile", "max", "--pre-include=cuda_fp16.h"}).has_cubin());
  }

  TEST_CASE("--restrict is refused: NVRTC 13 would keep it on for every later compile in the process") {
    Fixture fx;
    const char* loads = R"(extern "C" __global__ void twice(const float* x, float* y, int n) {
  int i = threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
)";
    kjit::Runtime rt(kjit::test::quiet_config(fx.dir / "restrict"));
    auto ptx = [&](std::vector<std::string> flags) {
      return rt.compile(kjit::Program("twice.cu", loads), {.arch = kjit::Arch::sm(90), .flags = std::move(flags)}).ptx;
    };
    for (const char* spelling : {"--restrict", "-restrict"}) {
      try {
        ptx({spelling});
        FAIL("took ", spelling);
      } catch (const kjit::UsageError& e) {
        const std::string what = e.what();
        CHECK(what.find(spelling) != std::string::npos);
        CHECK(what.find("every later compile") != std::string::npos);
        CHECK(what.find("__restrict__") != std::string::npos);
      }
    }
    // What it would have done to this process's later compiles, had NVRTC seen it: plain loads stay.
    CHECK(ptx({}).find("ld.global.f32") != std::string::npos);
    CHECK(ptx({"-DANOTHER_KEY"}).find("ld.global.nc.f32") == std::string::npos);
  }
}
