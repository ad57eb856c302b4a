// The kjit executable as a newcomer meets it (issue #52): misspelled commands and options get
// "did you mean", NVRTC and nvcc flags given before "--" get the corrected line, a virtual arch
// asked for a cubin is usage, and a compile without a GPU names --arch. Real processes, no GPU.
#include "support/helpers.hpp"
#include "support/temp_dir.hpp"

#include <kjit/device.hpp>
#include <kjit/tools/closest_names.hpp>
#include <kjit/tools/inspect.hpp>

#include "support/skip.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>

namespace {

const std::string k_kjit = std::string(KJIT_BINARY_DIR) + "/cli/kjit";

struct Run {
  int code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// `[ENV] kjit --cache-dir DIR/cache ARGS`, stdout and stderr apart.
Run run(const kjit::test::TempDir& dir, const std::string& args, const std::string& env = {}) {
  const auto err_file = dir / "stderr.txt";
  auto r = kjit::test::run_command(env + " " + k_kjit + " --cache-dir " + (dir / "cache").string() + " " + args + " 2>" +
                                   err_file.string());
  Run out{r.code, r.out, kjit::test::read_file(err_file)};
  INFO("kjit ", args, "\nstdout: ", out.out, "\nstderr: ", out.err);
  return out;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A kernel with a random factor, so no two runs share a cache entry by accident.
std::string random_kernel() {
  std::random_device rd;
  return "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] *= " + std::to_string(rd() % 1000 + 2) + ".0f; }\n";
}

}  // namespace

TEST_SUITE("closest_names") {
  TEST_CASE("closest_names finds one-letter slips and prefixes and nothing for a stranger") {
    const std::vector<std::string> commands{"info", "compile", "ptx", "cache", "diff", "stats", "status"};
    CHECK(kjit::closest_names("compil", commands) == std::vector<std::string>{"compile"});
    CHECK(kjit::closest_names("sats", commands) == std::vector<std::string>{"stats"});
    CHECK(kjit::closest_names("stat", commands) == std::vector<std::string>{"stats"});  // both are 1 away: the first
    CHECK(kjit::closest_names("comp", commands) == std::vector<std::string>{"compile"});  // a prefix
    CHECK(kjit::closest_names("frobnicate", commands).empty());
    CHECK(kjit::closest_names("compile", commands).empty());  // a name that exists needs no answer
    CHECK(kjit::closest_names("", commands).empty());
    CHECK(kjit::closest_names("xy", commands).empty());
  }
}

TEST_SUITE("cli usage hints") {
  // #52 item 13.
  TEST_CASE("misspelled commands and options get did you mean") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "k.cu", random_kernel());
    const std::string file = (dir / "k.cu").string();
    struct Case {
      std::string args;
      std::string expected;
    };
    for (const Case& c : {Case{"compil " + file, "unknown command \"compil\" (did you mean compile?)"},
                          Case{"cache sats", "unknown cache command \"sats\" (did you mean stats?)"},
                          Case{"compile --ach sm_90 " + file, "unknown option --ach (did you mean --arch?)"},
                          Case{"ptx --arch sm_90 --kernal k " + file, "unknown option --kernal (did you mean --kernel?)"},
                          Case{"--jsn info", "unknown option --jsn (did you mean --json?)"},
                          Case{"info --verbos", "unknown option --verbos (did you mean --verbose?)"},
                          Case{"--verbos info", "unknown option --verbos (did you mean --verbose?)"}}) {
      INFO(c.args);
      Run r = run(dir, c.args);
      CHECK(r.code == 2);
      CHECK(r.out.empty());
      CHECK(r.err.find("kjit: error: " + c.expected) == 0);
      CHECK_FALSE(has(r.err, "not expected"));
      CHECK_FALSE(has(r.err, "A subcommand is required"));
    }
    // The list is still given, and a word nothing is close to gets no guess.
    Run cache = run(dir, "cache sats");
    CHECK(has(cache.err, "the cache commands are stats,"));
    Run bare = run(dir, "cache");
    CHECK(bare.code == 2);
    CHECK(has(bare.err, "kjit: error: no cache command given; the cache commands are stats,"));
    Run stranger = run(dir, "frobnicate");
    CHECK(has(stranger.err, "unknown command \"frobnicate\"; the commands are info,"));
    CHECK_FALSE(has(stranger.err, "did you mean"));
    // In JSON too: one document, kind usage.
    Run json = run(dir, "--json cache sats");
    CHECK(json.code == 2);
    auto doc = nlohmann::json::parse(json.out, nullptr, false);
    REQUIRE_FALSE(doc.is_discarded());
    CHECK(doc["error"]["kind"] == "usage");
    CHECK(has(doc["error"]["message"].get<std::string>(), "did you mean stats?"));
    // A right command line still works.
    CHECK(run(dir, "compile --arch sm_90 " + file).code == 0);
  }

  // #52 item 12.
  TEST_CASE("NVRTC and nvcc flags before -- get the corrected command line") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "k.cu", random_kernel());
    const std::string file = (dir / "k.cu").string();
    Run o3 = run(dir, "compile " + file + " --arch sm_90 -O3");
    CHECK(o3.code == 2);
    CHECK(has(o3.err, "-O3: flags for NVRTC and nvcc go after \"--\": kjit --cache-dir " + (dir / "cache").string() +
                          " compile " + file + " --arch sm_90 -- -O3\n"));
    CHECK_FALSE(has(o3.err, "not expected"));
    // Flags already after "--" stay there, after the moved ones.
    Run fast = run(dir, "ptx --arch sm_90 --use_fast_math " + file + " -- -DSCALE=2");
    CHECK(fast.code == 2);
    CHECK(has(fast.err, "ptx --arch sm_90 " + file + " -- --use_fast_math -DSCALE=2\n"));
    // The corrected line works.
    CHECK(run(dir, "compile " + file + " --arch sm_90 -- -O3").code == 0);
    CHECK(run(dir, "ptx --arch sm_90 " + file + " -- --use_fast_math -DSCALE=2").code == 0);
    // A flag and its value move together; a one-letter option nobody has gets no guess.
    Run include = run(dir, "compile " + file + " --arch sm_90 -I " + dir.path().string());
    CHECK(include.code == 2);
    CHECK(has(include.err, "compile " + file + " --arch sm_90 -- -I " + dir.path().string() + "\n"));
    Run letter = run(dir, "info -Z");
    CHECK(letter.code == 2);
    CHECK(has(letter.err, "unknown option -Z\n"));
    // diff gives the flags after "--" to both builds.
    const std::string b = (dir / "b.cu").string();
    kjit::test::write_file(dir / "b.cu", random_kernel());
    Run diff = run(dir, "diff --arch sm_90 " + file + " " + b + " -lineinfo");
    CHECK(diff.code == 2);
    CHECK(has(diff.err, "diff --arch sm_90 " + file + " " + b + " -- -lineinfo\n"));
    // A command without NVRTC flags gets no such advice.
    Run info = run(dir, "info -O3");
    CHECK(info.code == 2);
    CHECK_FALSE(has(info.err, "go after"));
  }

  // #52 item 10.
  TEST_CASE("a virtual arch asked for a cubin is usage and writes nothing") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "k.cu", random_kernel());
    const std::string file = (dir / "k.cu").string();
    const std::string out = (dir / "out").string();
    Run cubin = run(dir, "compile --arch compute_90 --emit cubin -o " + out + " " + file);
    CHECK(cubin.code == 2);
    CHECK(has(cubin.err, "compute_90"));
    CHECK(has(cubin.err, "PTX only"));
    CHECK(has(cubin.err, "--arch sm_90"));
    CHECK_FALSE(std::filesystem::exists(dir / "out" / "k.cubin"));
    // The same arch given as a flag after "--".
    Run flag = run(dir, "compile --emit cubin -o " + out + " " + file + " -- -arch=compute_90");
    CHECK(flag.code == 2);
    CHECK(has(flag.err, "PTX only"));
    CHECK_FALSE(std::filesystem::exists(dir / "out" / "k.cubin"));
    // PTX of a virtual arch, and a cubin of a real one, are written.
    CHECK(run(dir, "compile --arch compute_90 --emit ptx -o " + out + " " + file).code == 0);
    CHECK(std::filesystem::file_size(dir / "out" / "k.ptx") > 0);
    CHECK(run(dir, "compile --arch sm_90 --emit cubin -o " + out + " " + file).code == 0);
    CHECK(std::filesystem::file_size(dir / "out" / "k.cubin") > 0);
  }

  // #52 item 14.
  TEST_CASE("a compile for the native arch without a GPU names --arch sm_90") {
    if (kjit::driver_available()) KJIT_SKIP("a GPU here: a native compile works, nothing to name");
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "k.cu", random_kernel());
    const std::string file = (dir / "k.cu").string();
    for (const std::string command : {"compile", "ptx", "resources"}) {
      INFO(command);
      Run r = run(dir, command + " " + file);
      CHECK(r.code == 3);
      CHECK(has(r.err, "--arch sm_90"));
    }
    Run json = run(dir, "--json compile " + file);
    CHECK(json.code == 3);
    auto doc = nlohmann::json::parse(json.out, nullptr, false);
    REQUIRE(doc.is_array());
    CHECK(doc[0]["error"]["kind"] == "driver");
    CHECK(has(doc[0]["error"]["message"].get<std::string>(), "--arch sm_90"));
  }

  // #52 item 9.
  TEST_CASE("ptx --kernel takes the names kjit lists for explicit instantiations") {
    kjit::test::TempDir dir;
    std::random_device rd;
    const int factor = static_cast<int>(rd() % 1000) + 2;
    kjit::test::write_file(dir / "tmpl.cu", fmt::format(R"(
template <typename T>
__global__ void copy_kernel(const T* in, T* out, int n) {{ int i = threadIdx.x; if (i < n) out[i] = in[i] * T({}); }}
template __global__ void copy_kernel<float>(const float*, float*, int);
template __global__ void copy_kernel<int>(const int*, int*, int);
template <typename T, int N>
__global__ void scale_kernel(T* x) {{ x[threadIdx.x] *= N; }}
template __global__ void scale_kernel<float, 256>(float*);
)", factor));
    const std::string file = (dir / "tmpl.cu").string();
    struct Case {
      std::string kernel;
      std::string symbol;
    };
    for (const Case& c : {Case{"copy_kernel<float>", "_Z11copy_kernelIfEvPKT_PS0_i"},
                          Case{"copy_kernel<int>", "_Z11copy_kernelIiEvPKT_PS0_i"},
                          Case{"scale_kernel<float, 256>", "_Z12scale_kernelIfLi256EEvPT_"},
                          Case{"scale_kernel<float,256>", "_Z12scale_kernelIfLi256EEvPT_"},
                          Case{"scale_kernel", "_Z12scale_kernelIfLi256EEvPT_"}}) {
      INFO(c.kernel);
      Run r = run(dir, "ptx --arch sm_90 " + file + " --kernel '" + c.kernel + "'");
      CHECK(r.code == 0);
      CHECK(has(r.out, ".entry " + c.symbol + "("));
      CHECK(std::count(r.out.begin(), r.out.end(), '\n') > 3);
      CHECK(r.out.find(".entry ") == r.out.rfind(".entry "));  // that kernel alone
      CHECK_FALSE(has(r.err, "--instantiate"));
    }
    // Two instances: ambiguous, naming both.
    Run two = run(dir, "ptx --arch sm_90 " + file + " --kernel copy_kernel");
    CHECK(two.code == 2);
    CHECK(has(two.err, "ambiguous"));
    CHECK(has(two.err, "copy_kernel<float>, copy_kernel<int>"));
    CHECK_FALSE(has(two.err, "no such function"));
    // An instance the file does not make: the hint for it.
    Run absent = run(dir, "ptx --arch sm_90 " + file + " --kernel 'copy_kernel<double>'");
    CHECK(absent.code == 2);
    CHECK(has(absent.err, "--instantiate 'copy_kernel<double>'"));
    CHECK(run(dir, "ptx --arch sm_90 " + file + " --kernel 'copy_kernel<double>' --instantiate 'copy_kernel<double>'")
              .code == 0);
    // sass takes the same names, where a disassembler is installed.
    if (kjit::inspect::find_disassembler()) {
      Run sass = run(dir, "sass --arch sm_90 " + file + " --kernel 'scale_kernel<float,256>'");
      CHECK(sass.code == 0);
      CHECK(has(sass.out, "_Z12scale_kernelIfLi256EEvPT_"));
      CHECK(run(dir, "sass --arch sm_90 " + file + " --kernel copy_kernel").code == 2);
    }
  }

  // #52 item 18.
  TEST_CASE("diff headers and the --link hint show C++ names demangled") {
    kjit::test::TempDir dir;
    std::random_device rd;
    const int factor = static_cast<int>(rd() % 1000) + 2;
    const std::string kernel = "__device__ float helper(float x) {{ return x * {}.0f; }}\n"
                               "__global__ void square(float* x, int n) {{ int i = threadIdx.x; "
                               "if (i < n) x[i] = helper(x[i]) * x[i]; }}\n";
    kjit::test::write_file(dir / "a.cu", fmt::format(fmt::runtime(kernel), factor));
    kjit::test::write_file(dir / "b.cu", fmt::format(fmt::runtime(kernel), factor + 1));
    Run diff = run(dir, "diff --arch sm_90 " + (dir / "a.cu").string() + " " + (dir / "b.cu").string());
    CHECK(diff.code == 1);
    CHECK(has(diff.out, "--- square(float*, int) ("));
    CHECK(has(diff.out, "+++ square(float*, int) ("));
    CHECK_FALSE(has(diff.out, "--- _Z"));
    CHECK_FALSE(has(diff.out, "+++ _Z"));

    kjit::test::write_file(dir / "use.cu", "extern __device__ float helper(float x);\n"
                                           "__global__ void use(float* p) { p[threadIdx.x] = helper(p[threadIdx.x]); }\n");
    Run use = run(dir, "compile --arch sm_90 " + (dir / "use.cu").string());
    CHECK(use.code == 1);
    CHECK(has(use.err, "kjit: helper(float) (_Z6helperf) is called here"));
    CHECK(has(use.err, "kjit compile --link"));
  }

  // #52 item 17.
  TEST_CASE("compile log warnings obey -q and KJIT_LOG and every warning line has one prefix") {
    kjit::test::TempDir dir;
    std::random_device rd;
    kjit::test::write_file(dir / "w.cu", "__global__ void k(float* x) { int unused; x[threadIdx.x] *= " +
                                             std::to_string(rd() % 1000 + 2) + ".0f; }\n");
    const std::string file = (dir / "w.cu").string();
    const std::string warning = "variable \"unused\" was declared but never referenced";
    Run shown = run(dir, "compile --arch sm_90 " + file);
    CHECK(shown.code == 0);
    CHECK(has(shown.err, warning));
    Run quiet = run(dir, "-q compile --arch sm_90 " + file);
    CHECK(quiet.code == 0);
    CHECK(quiet.err.empty());
    Run error_level = run(dir, "compile --arch sm_90 " + file, "KJIT_LOG=error");
    CHECK(error_level.code == 0);
    CHECK(error_level.err.empty());
    CHECK(has(run(dir, "compile --arch sm_90 " + file, "KJIT_LOG=info").err, warning));

    // The library's warnings and the CLI's own share "kjit: warning:"; each folder is named once.
    Run home = run(dir, "compile --arch sm_90 " + file, "KJIT_CUDA_HOME=/nonexistent");
    CHECK(home.code == 0);
    const auto at = home.err.find("kjit: warning: KJIT_CUDA_HOME=/nonexistent does not exist");
    REQUIRE(at != std::string::npos);
    const std::string line = home.err.substr(at, home.err.find('\n', at) - at);
    const std::string listed = line.substr(line.find("looked for in ") + 14);
    std::vector<std::string> folders;
    for (std::size_t pos = 0; pos < listed.size();) {
      std::size_t end = listed.find(", ", pos);
      std::string folder = listed.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
      if (folder.ends_with(" instead")) folder.resize(folder.size() - 8);
      folders.push_back(folder);
      pos = end == std::string::npos ? listed.size() : end + 2;
    }
    CAPTURE(line);
    REQUIRE_FALSE(folders.empty());
    for (const auto& f : folders) {
      CHECK(std::count(folders.begin(), folders.end(), f) == 1);
      CHECK(f != "/nonexistent");
    }
    CHECK_FALSE(has(home.err, "kjit: warn:"));
    CHECK(run(dir, "compile --arch sm_90 " + file, "KJIT_CUDA_HOME=/nonexistent KJIT_LOG=error").err.empty());
  }

  // #57 item 7.
  TEST_CASE("a one-file command given two files says it takes one") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "a.cu", random_kernel());
    kjit::test::write_file(dir / "b.cu", random_kernel());
    const std::string a = (dir / "a.cu").string(), b = (dir / "b.cu").string();
    for (const std::string command : {"ptx", "sass", "resources", "cache explain"}) {
      INFO(command);
      Run r = run(dir, command + " --arch sm_90 " + a + " " + b);
      CHECK(r.code == 2);
      CHECK(r.out.empty());
      CHECK(has(r.err, "kjit: error: kjit " + command + " takes one file, and " + b + " came after " + a));
      CHECK(has(r.err, "kjit compile takes several"));
      CHECK_FALSE(has(r.err, "reading compile flag"));
    }
    // Flags after "--" are still flags, and one file still works.
    CHECK(run(dir, "ptx --arch sm_90 " + a + " -- -DX=1").code == 0);
  }

  // #57 item 8.
  TEST_CASE("a kernel in a namespace is found by its unqualified name and every hint is qualified") {
    kjit::test::TempDir dir;
    std::random_device rd;
    const int factor = static_cast<int>(rd() % 1000) + 2;
    kjit::test::write_file(dir / "ns.cu", fmt::format(R"(
namespace ops {{
__global__ void relu(float* x, int n) {{ int i = threadIdx.x; if (i < n) x[i] = x[i] > 0 ? x[i] * {} : 0; }}
template <class T> __global__ void gelu(T* x) {{ x[threadIdx.x] *= T({}); }}
}}
)", factor, factor + 1));
    const std::string file = (dir / "ns.cu").string();
    // The only kernel named relu, by its unqualified name.
    Run relu = run(dir, "ptx --arch sm_90 " + file + " --kernel relu");
    CHECK(relu.code == 0);
    CHECK(has(relu.out, ".entry _ZN3ops4reluEPfi("));
    // The instance, named as --instantiate made it or without its namespace.
    for (const std::string kernel : {"ops::gelu<float>", "gelu<float>"}) {
      INFO(kernel);
      Run r = run(dir, "ptx --arch sm_90 " + file + " --instantiate 'ops::gelu<float>' --kernel '" + kernel + "'");
      CHECK(r.code == 0);
      CHECK(has(r.out, ".entry _ZN3ops4geluIfEEvPT_("));
      CHECK_FALSE(has(r.err, "--instantiate"));
    }
    // Not instantiated: the hint names the template with its namespace, and following it works.
    for (const std::string kernel : {"gelu<float>", "gelu"}) {
      INFO(kernel);
      Run r = run(dir, "ptx --arch sm_90 " + file + " --kernel '" + kernel + "'");
      CHECK(r.code == 2);
      CHECK(has(r.err, kernel == "gelu" ? "--instantiate 'ops::gelu<...>'" : "--instantiate 'ops::gelu<float>'"));
      CHECK_FALSE(has(r.err, "--instantiate 'gelu"));
    }
    // A file with another kernel: compiling it names the template left without an instance.
    Run compiled = run(dir, "compile --arch sm_90 " + file);
    CHECK(compiled.code == 0);
    CHECK(has(compiled.err, "template kernel ops::gelu made no code"));
    CHECK(has(compiled.err, "--instantiate 'ops::gelu<...>'"));
    Run instantiated = run(dir, "compile --arch sm_90 --instantiate 'ops::gelu<double>' " + file);
    CHECK(instantiated.code == 0);
    CHECK_FALSE(has(instantiated.err, "made no code"));
  }

  // #57 item 11.
  TEST_CASE("an nvcc flag before -- takes its value along even when the value is one of kjit's options") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "k.cu", random_kernel());
    const std::string file = (dir / "k.cu").string();
    const std::string prefix = "kjit --cache-dir " + (dir / "cache").string() + " compile " + file + " --arch sm_90 -- ";
    struct Case {
      std::string flags;
      std::string moved;
    };
    for (const Case& c : {Case{"-Xptxas -v", "-Xptxas -v"}, Case{"-Xcompiler -fPIC", "-Xcompiler -fPIC"},
                          Case{"-Xcompiler -fPIC -O3", "-Xcompiler -fPIC -O3"}}) {
      INFO(c.flags);
      Run r = run(dir, "compile " + file + " --arch sm_90 " + c.flags);
      CHECK(r.code == 2);
      CHECK(has(r.err, c.moved + ": flags for NVRTC and nvcc go after \"--\": " + prefix + c.moved + "\n"));
      CHECK_FALSE(has(r.err, "unknown option"));
      // The corrected line works.
      CHECK(run(dir, "compile " + file + " --arch sm_90 -- " + c.flags).code == 0);
    }
    // Thousands of flags before "--": the same answer, each moved once (the search is linear).
    std::string many;
    for (int i = 0; i < 8000; ++i) many += " -DX";  // one word again and again: each found at its next place
    Run lots = run(dir, "compile " + file + " --arch sm_90" + many);
    CHECK(lots.code == 2);
    const std::string corrected = lots.err.substr(0, lots.err.find('\n')).substr(lots.err.find(" -- ") + 4);
    std::size_t moved = 0;
    for (std::size_t at = corrected.find("-DX"); at != std::string::npos; at = corrected.find("-DX", at + 1)) ++moved;
    CHECK(moved == 8000);
  }

  // #57 item 12.
  TEST_CASE("swapped letters, arch spellings, arch lists, folders and key folders get the line meant") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "k.cu", random_kernel());
    const std::string file = (dir / "k.cu").string();
    for (const auto& [args, expected] : std::vector<std::pair<std::string, std::string>>{
             {"cahce stats", "unknown command \"cahce\" (did you mean cache?)"},
             {"wram", "unknown command \"wram\" (did you mean warm?)"},
             {"cache stast", "unknown cache command \"stast\" (did you mean stats?)"},
             {"compile --arch sm90 " + file, "did you mean sm_90?"},
             {"compile --arch SM_90a " + file, "did you mean sm_90a?"},
             {"compile --arch compute90 " + file, "did you mean compute_90?"}}) {
      INFO(args);
      Run r = run(dir, args);
      CHECK(r.code == 2);
      CHECK(has(r.err, expected));
    }
    Run list = run(dir, "compile --arch sm_80,sm_90 " + file);
    CHECK(list.code == 2);
    CHECK(has(list.err, "kjit warm DIR --arch sm_80,sm_90"));
    CHECK(has(list.err, "--arch sm_80"));
    std::filesystem::create_directories(dir / "kernels");
    Run folder = run(dir, "compile --arch sm_90 " + (dir / "kernels").string());
    CHECK(folder.code == 1);  // an input that is no file: io, as in every subcommand (test_cli_json)
    CHECK(has(folder.err, "kjit warm " + (dir / "kernels").string()));
    CHECK(has(folder.err, "kjit.json"));
    // A key pair into a folder that is not there: the folder is named, no temporary file.
    Run keys = run(dir, "cache keygen --out " + (dir / "keys" / "ci").string());
    CHECK(keys.code == 1);
    CHECK(has(keys.err, "the folder " + (dir / "keys").string() + " does not exist"));
    CHECK_FALSE(has(keys.err, ".tmp"));
    CHECK_FALSE(std::filesystem::exists(dir / "keys"));
    std::filesystem::create_directories(dir / "keys");
    CHECK(run(dir, "cache keygen --out " + (dir / "keys" / "ci").string()).code == 0);
    CHECK(std::filesystem::exists(dir / "keys" / "ci.key"));
    // --version names NVRTC and the toolkit, as `info` finds them.
    Run version = run(dir, "--version");
    CHECK(version.code == 0);
    const auto info = nlohmann::json::parse(run(dir, "--json info").out);
    CHECK(has(version.out, "kjit " + info["kjit_version"].get<std::string>() + "\n"));
    CHECK(has(version.out, "NVRTC " + info["nvrtc_version"].get<std::string>() + " (" +
                               info["nvrtc_library"].get<std::string>() + ")"));
    CHECK(has(version.out, "toolkit: " + info["toolkit_root"].get<std::string>()));
    const auto json = nlohmann::json::parse(run(dir, "--json --version").out);
    CHECK(json["nvrtc_library"] == info["nvrtc_library"]);
  }

  // #57 item 12: the places a toolkit is looked for are toolkits, never the folder above one.
  TEST_CASE("the folders listed as searched for the toolkit hold no folder above a toolkit") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "k.cu", random_kernel());
    Run r = run(dir, "compile --arch sm_90 " + (dir / "k.cu").string(), "KJIT_CUDA_HOME=/nonexistent");
    const auto at = r.err.find("looked for in ");
    REQUIRE(at != std::string::npos);
    std::string listed = r.err.substr(at + 14, r.err.find(" instead", at) - at - 14);
    std::vector<std::filesystem::path> folders;
    for (std::size_t pos = 0; pos <= listed.size();) {
      const std::size_t end = std::min(listed.find(", ", pos), listed.size());
      folders.emplace_back(listed.substr(pos, end - pos));
      pos = end + 2;
    }
    CAPTURE(listed);
    const auto info = nlohmann::json::parse(run(dir, "--json info").out);
    const std::filesystem::path toolkit = info["toolkit_root"].get<std::string>();
    for (const auto& f : folders) {
      CHECK(f != toolkit.parent_path());
      CHECK(f != std::filesystem::path("/usr/local"));
      CHECK(f != std::filesystem::path("/usr"));
    }
  }
}
