// The kjit executable: compile --json outcomes, cache commands, exit codes, and 16 real
// processes compiling the same 20 kernels into one empty cache (each key compiled once).
#include "support/helpers.hpp"
#include "support/temp_dir.hpp"
#include "support/skip.hpp"

#include <kjit/device.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

const std::string k_kjit = std::string(KJIT_BINARY_DIR) + "/cli/kjit";

using Run = kjit::test::CommandResult;

// `kjit ARGS`, stderr dropped.
Run run(const std::string& args) { return kjit::test::run_command(k_kjit + " " + args + " 2>/dev/null"); }

std::string kernel_source(int i) {
  return "extern \"C\" __global__ void k" + std::to_string(i) +
         "(float* x, int n) {\n  int j = blockIdx.x * blockDim.x + threadIdx.x;\n  if (j < n) x[j] = x[j] * " +
         std::to_string(i + 2) + ".0f + 1.0f;\n}\n";
}

}  // namespace

TEST_SUITE("cli") {
  TEST_CASE("compile --json says compiled then hit with the same key and cache commands report it") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "a.cu", kernel_source(1));
    std::string cache = "--cache-dir " + (dir / "cache").string();
    Run first = run(cache + " compile --json --arch sm_90 " + (dir / "a.cu").string() + " -- -DUNUSED=1");
    REQUIRE(first.code == 0);
    auto j1 = nlohmann::json::parse(first.out).at(0);  // one document: an array, one object per file
    CHECK(j1["outcome"] == "compiled");
    CHECK(j1["key"].get<std::string>().size() == 32);
    Run second = run(cache + " compile --json --arch sm_90 " + (dir / "a.cu").string() + " -- -DUNUSED=1");
    auto j2 = nlohmann::json::parse(second.out).at(0);
    CHECK(j2["outcome"] == "hit");
    CHECK(j2["key"] == j1["key"]);

    auto stats = nlohmann::json::parse(run(cache + " --json cache stats").out);
    CHECK(stats["entries"] == 1);
    CHECK(stats["compiles"] == 1);
    CHECK(stats["hits"] == 1);
    auto ls = nlohmann::json::parse(run(cache + " --json cache ls").out);
    REQUIRE(ls.size() == 1);
    CHECK(ls[0]["key"] == j1["key"]);
    auto explain = nlohmann::json::parse(run(cache + " --json cache explain --arch sm_90 " + (dir / "a.cu").string() +
                                             " -- -DUNUSED=1").out);
    CHECK(explain["key"] == j1["key"]);
    CHECK(run(cache + " cache verify").code == 0);
    CHECK(run(cache + " cache clear").code == 0);
    CHECK(nlohmann::json::parse(run(cache + " --json cache stats").out)["entries"] == 0);
  }

  TEST_CASE("exit codes: 1 for a syntax error or a missing file and 2 for a bad arch or size") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "bad.cu", "__global__ void k() { int x = ; }\n");
    std::string cache = "--cache-dir " + (dir / "cache").string();
    CHECK(run(cache + " compile --arch sm_90 " + (dir / "bad.cu").string()).code == 1);
    CHECK(run(cache + " compile --arch sm_5 " + (dir / "bad.cu").string()).code == 2);
    CHECK(run(cache + " cache prune --max-size lots").code == 2);
    CHECK(run(cache + " compile --arch sm_90 " + (dir / "missing.cu").string()).code == 1);
    CHECK(run("no-such-command").code == 2);
    CHECK(run("compile --help").code == 0);
  }

  TEST_CASE("16 processes compiling the same 20 kernels into an empty cache compile each key once") {
    kjit::test::TempDir dir;
    std::string files;
    for (int i = 0; i < 20; ++i) {
      auto f = dir / fmt::format("k{}.cu", i);
      kjit::test::write_file(f, kernel_source(i));
      files += fmt::format(" {}", f.string());
    }
    std::string cache = (dir / "cache").string();
    std::vector<FILE*> procs;
    for (int p = 0; p < 16; ++p) {
      std::string cmd = k_kjit + " --cache-dir " + cache + " compile --json --arch sm_90" + files + " 2>&1";
      procs.push_back(popen(cmd.c_str(), "r"));
      REQUIRE(procs.back() != nullptr);
    }
    std::map<std::string, std::map<std::string, int>> outcomes;  // key -> outcome -> count
    int failures = 0;
    for (FILE* p : procs) {
      const Run r = kjit::test::finish_command(p);
      const std::string& out = r.out;
      failures += r.code != 0;
      auto all = nlohmann::json::parse(out, nullptr, false);  // exactly one document: an array
      REQUIRE_MESSAGE((!all.is_discarded() && all.is_array()), out);
      for (const auto& j : all) outcomes[j["key"].get<std::string>()][j["outcome"].get<std::string>()]++;
    }
    CHECK(failures == 0);
    CHECK(outcomes.size() == 20);
    for (auto& [key, counts] : outcomes) {
      CHECK_MESSAGE(counts["compiled"] == 1, key);
      CHECK(counts["compiled"] + counts["hit"] + counts["waited"] == 16);
    }
    Run verify = run("--cache-dir " + cache + " --json cache verify");
    CHECK(verify.code == 0);
    CHECK(nlohmann::json::parse(verify.out)["ok"] == 20);
  }

  // #30 item 6: with a 64 KiB RLIMIT_FSIZE and a larger entry, kjit compile died of SIGXFSZ
  // (exit 153, nothing printed) and left a 64 KiB temporary and a lock file behind.
  TEST_CASE("a file-size limit below the entry: one warning, the result printed, exit 0, nothing left behind") {
    kjit::test::TempDir dir;
    std::string source;
    for (int i = 0; i < 120; ++i) source += kernel_source(i);
    kjit::test::write_file(dir / "many.cu", source);
    const std::string err = (dir / "err.txt").string();
    const auto cache = dir / "cache";
    Run r = kjit::test::run_command(fmt::format("prlimit --fsize=65536 {} --cache-dir {} --json compile --arch sm_90 {} 2>{}",
                                                k_kjit, cache.string(), (dir / "many.cu").string(), err));
    CHECK(r.code == 0);
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    REQUIRE_MESSAGE(!j.is_discarded(), r.out);
    CHECK(j[0]["outcome"] == "compiled");
    CHECK(j[0]["ptx_bytes"].get<std::size_t>() + j[0]["cubin_bytes"].get<std::size_t>() > 65536);
    const std::string warning = kjit::test::read_file(err);
    CHECK_MESSAGE(warning.find("File too large") != std::string::npos, warning);
    std::size_t lines = 0;
    for (char c : warning) lines += c == '\n';
    CHECK(lines == 1);
    for (const auto& e : std::filesystem::recursive_directory_iterator(cache)) {
      INFO(e.path().string());
      CHECK_FALSE(e.path().filename().string().starts_with(".tmp."));
      CHECK_FALSE(e.path().filename().string().ends_with(".lock"));
      CHECK_FALSE(e.path().filename().string().ends_with(".kjit"));
    }
  }

  // -o replaces its files whole (kjit::write_file_atomically): a folder the user may not write to
  // fails the write, names the file and why, and leaves the old file and no temporary.
  TEST_CASE("compile -o into a folder the user may not write to fails naming the file and leaves it whole") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "a.cu", kernel_source(3));
    std::filesystem::create_directory(dir / "out");
    kjit::test::write_file(dir / "out" / "a.ptx", "old");
    ::chmod(dir.path().c_str(), 0777);  // the unprivileged user makes its cache here
    ::chmod((dir / "out").c_str(), 0755);
    ::chmod((dir / "out" / "a.ptx").c_str(), 0666);
    ::chmod((dir / "a.cu").c_str(), 0644);
    Run r = kjit::test::run_command("setpriv --reuid=54321 --regid=54321 --clear-groups " + k_kjit + " --cache-dir " +
                                    (dir / "cache").string() + " compile --arch sm_90 --emit ptx -o " +
                                    (dir / "out").string() + " " + (dir / "a.cu").string() + " 2>&1");
    CHECK(r.code == 1);
    CHECK_MESSAGE(r.out.find((dir / "out" / "a.ptx").string()) != std::string::npos, r.out);
    CHECK_MESSAGE(r.out.find("Permission denied") != std::string::npos, r.out);
    CHECK(kjit::test::read_file(dir / "out" / "a.ptx") == "old");
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir / "out")) names.push_back(e.path().filename().string());
    CHECK(names == std::vector<std::string>{"a.ptx"});
    // Writable, the same command replaces the file whole.
    ::chmod((dir / "out").c_str(), 0777);
    r = kjit::test::run_command("setpriv --reuid=54321 --regid=54321 --clear-groups " + k_kjit + " --cache-dir " +
                                (dir / "cache").string() + " compile --arch sm_90 --emit ptx -o " +
                                (dir / "out").string() + " " + (dir / "a.cu").string() + " 2>&1");
    CHECK_MESSAGE(r.code == 0, r.out);
    CHECK(kjit::test::read_file(dir / "out" / "a.ptx").find(".visible .entry k3") != std::string::npos);
  }

  // #38 item 5: nvcc's flags after --, and the help that points to their table.
  TEST_CASE("compile --help points to docs/nvcc-flags.md and nvcc flags after -- are translated or refused") {
    CHECK(run("compile --help").out.find("docs/nvcc-flags.md") != std::string::npos);
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "k.cu", kernel_source(0));
    const std::string cache = "--cache-dir " + (dir / "cache").string();
    const std::string file = (dir / "k.cu").string();
    // Translated and dropped: exit 0, one warning for the host-only flag, the arch from -gencode.
    Run ok = kjit::test::run_command(k_kjit + " " + cache + " --json compile " + file +
                                     " -- -gencode arch=compute_80,code=sm_80 --expt-relaxed-constexpr -res-usage "
                                     "-Xcompiler -fPIC -O3 2>&1 >/dev/null");
    CHECK_MESSAGE(ok.code == 0, ok.out);
    CHECK(ok.out.find("dropping compile flag \"-Xcompiler -fPIC\"") != std::string::npos);
    CHECK(ok.out.find("dropping compile flag") == ok.out.rfind("dropping compile flag"));
    Run arch = run(cache + " compile " + file + " -- -gencode=arch=compute_80,code=sm_80");
    CHECK(arch.out.find("sm_80") != std::string::npos);
    // Unknown: exit 2, naming the flag and the closest option.
    Run unknown = kjit::test::run_command(k_kjit + " " + cache + " compile --arch sm_90 " + file +
                                          " -- --expt-relaxed-constexp 2>&1");
    CHECK(unknown.code == 2);
    CHECK(unknown.out.find("\"--expt-relaxed-constexp\"") != std::string::npos);
    CHECK(unknown.out.find("closest option is --expt-relaxed-constexpr") != std::string::npos);
    // Two archs: exit 2, saying what to do.
    Run two = kjit::test::run_command(k_kjit + " " + cache + " compile " + file +
                                      " -- -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 2>&1");
    CHECK(two.code == 2);
    CHECK(two.out.find("kjit warm --arch sm_80,sm_90") != std::string::npos);
  }

  // #40 item 5: NVRTC 13.0 ends a log with ptxas's report in two NUL bytes; kjit kept one of them
  // ("^@" on stderr, "\u0000" in --json, '\x00' at the end of Python's CompileResult.log).
  TEST_CASE("a compile log with ptxas's report holds no NUL byte on stderr or in --json") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "w.cu", "extern \"C\" __global__ void w(float* x) { int unused; x[0] = 1; }\n");
    const std::string cache = "--cache-dir " + (dir / "cache").string();
    for (const char* flags : {"-Xptxas -v", "-res-usage", ""}) {
      INFO("flags: " << flags);
      Run text = kjit::test::run_command(k_kjit + " " + cache + " compile --arch sm_90 " + (dir / "w.cu").string() +
                                         " -- " + flags + " 2>&1 >/dev/null");
      CHECK(text.code == 0);
      CHECK(text.out.find("warning #177-D") != std::string::npos);
      CHECK(text.out.find('\0') == std::string::npos);
      Run json = run(cache + " --json compile --arch sm_90 " + (dir / "w.cu").string() + " -- " + flags);
      CHECK(json.code == 0);
      CHECK(json.out.find("\\u0000") == std::string::npos);
      const std::string log = nlohmann::json::parse(json.out).at(0).at("log").get<std::string>();
      CHECK(log.find('\0') == std::string::npos);
      CHECK(log.find("warning #177-D") != std::string::npos);
      if (std::string(flags) == "-Xptxas -v") CHECK(log.find("ptxas info") != std::string::npos);
    }
  }

  // #40 item 6: "kjit compile a/k.cu b/k.cu -o out" wrote out/k.ptx twice, exit 0, a's kernel lost.
  TEST_CASE("compile -o refuses two files of one name and writes nothing") {
    kjit::test::TempDir dir;
    std::mt19937 rng(std::random_device{}());
    const std::string stem = "k" + std::to_string(rng() % 100000);
    std::filesystem::create_directories(dir / "a");
    std::filesystem::create_directories(dir / "b");
    kjit::test::write_file(dir / "a" / (stem + ".cu"), kernel_source(1));
    kjit::test::write_file(dir / "b" / (stem + ".cu"), kernel_source(2));
    kjit::test::write_file(dir / "c.cu", kernel_source(3));
    const std::string cache = "--cache-dir " + (dir / "cache").string();
    const std::string a = (dir / "a" / (stem + ".cu")).string(), b = (dir / "b" / (stem + ".cu")).string();
    Run r = kjit::test::run_command(k_kjit + " " + cache + " compile --arch sm_90 " + (dir / "c.cu").string() + " " + a +
                                    " " + b + " -o " + (dir / "out").string() + " 2>&1");
    CHECK(r.code == 2);
    CHECK_MESSAGE(r.out.find(a) != std::string::npos, r.out);
    CHECK_MESSAGE(r.out.find(b) != std::string::npos, r.out);
    CHECK(!std::filesystem::exists(dir / "out" / (stem + ".ptx")));
    CHECK(!std::filesystem::exists(dir / "out" / "c.ptx"));  // refused before anything was compiled
    Run json = run(cache + " --json compile --arch sm_90 " + a + " " + b + " -o " + (dir / "out").string());
    CHECK(json.code == 2);
    CHECK(nlohmann::json::parse(json.out).at("error").at("kind") == "usage");
    // One folder each: both kept.
    CHECK(run(cache + " compile --arch sm_90 " + a + " -o " + (dir / "out_a").string()).code == 0);
    CHECK(run(cache + " compile --arch sm_90 " + b + " -o " + (dir / "out_b").string()).code == 0);
    CHECK(kjit::test::read_file(dir / "out_a" / (stem + ".ptx")).find("k1") != std::string::npos);
    CHECK(kjit::test::read_file(dir / "out_b" / (stem + ".ptx")).find("k2") != std::string::npos);
    // The same file twice writes the same output: not refused.
    CHECK(run(cache + " compile --arch sm_90 " + a + " " + a + " -o " + (dir / "out_twice").string()).code == 0);
  }

  // #40 item 7: kernels_src/square.cu, ./square.cu, square.cu and the absolute path were four keys
  // and four compiles of the same bytes and options.
  TEST_CASE("one file spelled four ways is one key unless its output can hold the name") {
    kjit::test::TempDir dir;
    std::filesystem::create_directories(dir / "kernels");
    std::mt19937 rng(std::random_device{}());
    const int n = static_cast<int>(rng() % 1000);
    // An unused variable: a warning, whose log names the file as each request spells it.
    kjit::test::write_file(dir / "kernels" / "square.cu",
                           "namespace { __device__ float g; }\nextern \"C\" __global__ void sq(float* x) {\n"
                           "  int unused;\n  g = x[1];\n  x[0] = x[0] * x[0] + g + " + std::to_string(n) + ";\n}\n");
    const std::string cache = "--cache-dir " + (dir / "cache").string();
    const std::string top = "cd " + dir.path().string() + " && " + k_kjit + " " + cache;
    const std::string inside = "cd " + (dir / "kernels").string() + " && " + k_kjit + " " + cache;
    auto compile = [](const std::string& where, const std::string& file, const std::string& flags = "") {
      Run r = kjit::test::run_command(where + " --json compile --arch sm_90 " + file + " -- " + flags + " 2>/dev/null");
      REQUIRE_MESSAGE(r.code == 0, r.out);
      return nlohmann::json::parse(r.out).at(0);
    };
    const auto first = compile(top, "kernels/square.cu");
    CHECK(first["outcome"] == "compiled");
    for (const auto& [where, file] : std::vector<std::pair<std::string, std::string>>{
             {inside, "./square.cu"}, {inside, "square.cu"}, {top, (dir / "kernels" / "square.cu").string()},
             {top, "kernels/../kernels/square.cu"}}) {
      INFO("spelled " << file);
      const auto j = compile(where, file);
      CHECK(j["key"] == first["key"]);
      CHECK(j["outcome"] == "hit");
      // The log of the hit names the file as this request does.
      const std::string log = j["log"].get<std::string>();
      CHECK_MESSAGE(log.find(file + "(3): warning") == 0, log);
    }
    // Another file name: NVRTC names the anonymous namespace's symbols after it, another key.
    std::filesystem::copy_file(dir / "kernels" / "square.cu", dir / "kernels" / "cube.cu");
    CHECK(compile(inside, "cube.cu")["key"] != first["key"]);
    // Line info holds the name as given: one key per spelling.
    const auto lined = compile(top, "kernels/square.cu", "-lineinfo");
    CHECK(compile(inside, "./square.cu", "-lineinfo")["key"] != lined["key"]);
    CHECK(compile(top, "kernels/square.cu", "-lineinfo")["key"] == lined["key"]);
    // So does __FILE__ (or assert): the PTX of each spelling holds its own name.
    kjit::test::write_file(dir / "kernels" / "named.cu",
                           "extern \"C\" __global__ void nm(const char** out) { *out = __FILE__; }\n");
    const auto a = compile(top, "kernels/named.cu");
    const auto b = compile(inside, "./named.cu");
    CHECK(a["key"] != b["key"]);
    CHECK(b["outcome"] == "compiled");
    Run ptx_a = kjit::test::run_command(top + " ptx --arch sm_90 kernels/named.cu 2>/dev/null");
    Run ptx_b = kjit::test::run_command(inside + " ptx --arch sm_90 ./named.cu 2>/dev/null");
    CHECK(ptx_a.code == 0);
    CHECK(ptx_a.out != ptx_b.out);  // the string __FILE__ became differs
  }

  // #40 item 8: "kjit compile k.cu --arch sm_90 -- -arch sm_80" compiled for sm_80 without a word.
  TEST_CASE("an arch after -- that disagrees with --arch is a usage error and one that agrees is taken") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "k.cu", kernel_source(4));
    const std::string cache = "--cache-dir " + (dir / "cache").string();
    const std::string file = (dir / "k.cu").string();
    std::mt19937 rng(std::random_device{}());
    const std::vector<std::string> archs = {"sm_75", "sm_80", "sm_86", "sm_89", "sm_90"};
    const std::string typed = archs[rng() % archs.size()];
    std::string other = archs[rng() % archs.size()];
    while (other == typed) other = archs[rng() % archs.size()];
    for (const std::string& flag : {"-arch " + other, "-arch=" + other, "--gpu-architecture=" + other,
                                    "-gencode arch=compute_" + other.substr(3) + ",code=" + other}) {
      INFO(typed << " against " << flag);
      Run r = kjit::test::run_command(k_kjit + " " + cache + " compile --arch " + typed + " " + file + " -- " + flag +
                                      " 2>&1");
      CHECK(r.code == 2);
      CHECK(r.out.find(typed) != std::string::npos);
      CHECK(r.out.find(other) != std::string::npos);
      CHECK(r.out.find("one arch per request") != std::string::npos);
    }
    auto arch_of = [&](const std::string& args) {
      Run r = run(cache + " --json compile " + args);
      REQUIRE_MESSAGE(r.code == 0, r.out);
      return nlohmann::json::parse(r.out).at(0).at("arch").get<std::string>();
    };
    CHECK(arch_of("--arch " + typed + " " + file + " -- -arch=" + typed) == typed);
    CHECK(arch_of(file + " -- -arch " + other) == other);  // no --arch: the flag's
    CHECK(arch_of("--arch compute_90 " + file + " -- -arch=sm_90") == "sm_90");  // they agree: sm_90 makes both
    CHECK(arch_of("--arch sm_90 " + file + " -- -arch=compute_90") == "sm_90");
  }

  // #40 item 17: "--emit" without "-o" was ignored silently.
  TEST_CASE("compile --emit without -o is a usage error naming -o") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "k.cu", kernel_source(5));
    Run r = kjit::test::run_command(k_kjit + " --cache-dir " + (dir / "cache").string() + " compile --arch sm_90 --emit ptx " +
                                    (dir / "k.cu").string() + " 2>&1");
    CHECK(r.code == 2);
    CHECK_MESSAGE(r.out.find("-o DIR") != std::string::npos, r.out);
    CHECK(run("--cache-dir " + (dir / "cache").string() + " compile --arch sm_90 --emit ptx -o " +
              (dir / "out").string() + " " + (dir / "k.cu").string()).code == 0);
    CHECK(std::filesystem::exists(dir / "out" / "k.ptx"));
  }

  // #40 item 17: every message without a driver named the library twice ("libcuda.so.1: libcuda.so.1: ...").
  TEST_CASE("without a driver the message names libcuda.so.1 once") {
    if (kjit::driver_available()) {
      KJIT_SKIP("a driver is present; the driver-absent case is not testable here");
    }
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "k.cu", kernel_source(6));
    const std::string cache = "--cache-dir " + (dir / "cache").string();
    for (const std::string& args : {"compile " + (dir / "k.cu").string(), std::string("info")}) {
      Run r = kjit::test::run_command(k_kjit + " " + cache + " " + args + " 2>&1");
      INFO(args << ": " << r.out);
      const auto first = r.out.find("libcuda.so.1");
      CHECK(first != std::string::npos);
      CHECK(r.out.find("libcuda.so.1", first + 1) == std::string::npos);
    }
  }
}
