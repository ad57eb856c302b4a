// The kjit executable's contract as a user meets it (issue #34): data on stdout and diagnostics on
// stderr, one exit-code table (3: could not run here), the help and parse errors that say what
// to do, templates that were never instantiated, and prune's units. Nothing here needs a GPU;
// the cases that depend on what is installed check what this machine has.
#include "tools/profile/cupti_library.hpp"
#include "support/helpers.hpp"
#include "support/temp_dir.hpp"
#include "support/skip.hpp"

#include <kjit/device.hpp>
#include <kjit/tools/inspect.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

namespace {

const std::string k_kjit = std::string(KJIT_BINARY_DIR) + "/cli/kjit";
const std::string k_fixture = std::string(KJIT_SOURCE_DIR) + "/tests/data/warm_fixture";

struct Run {
  int code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// `[ENV] kjit --cache-dir DIR/cache ARGS`, stdout and stderr apart.
Run run(const kjit::test::TempDir& dir, const std::string& args, const std::string& env = {}) {
  const auto err_file = dir / "stderr.txt";
  auto r = kjit::test::run_command(env + " " + k_kjit + " --cache-dir " + (dir / "cache").string() + " " + args +
                                   " 2>" + err_file.string());
  Run out{r.code, r.out, kjit::test::read_file(err_file)};
  INFO("kjit ", args, "\nstdout: ", out.out, "\nstderr: ", out.err);
  return out;
}

// `ENV kjit ARGS` (no --cache-dir of its own), stdout and stderr apart.
Run run_plain(const kjit::test::TempDir& dir, const std::string& env, const std::string& args) {
  const auto err_file = dir / "stderr.txt";
  auto r = kjit::test::run_command(env + " " + k_kjit + " " + args + " 2>" + err_file.string());
  Run out{r.code, r.out, kjit::test::read_file(err_file)};
  INFO(env, " kjit ", args, "\nstdout: ", out.out, "\nstderr: ", out.err);
  return out;
}

// What kjit must say of a named cache folder it cannot use, from compile and from the cache
// commands: exit 3 ("could not run"), the folder named, "not in use", and in JSON kind
// "unavailable" (compile: in its array).
void check_named_cache_refused(const kjit::test::TempDir& dir, const std::string& env, const std::string& cache_args,
                               const std::string& folder, const std::string& file) {
  INFO("cache folder ", folder);
  Run compile = run_plain(dir, env, cache_args + " compile --arch sm_90 -o " + (dir / "out").string() + " " + file);
  CHECK(compile.code == 3);
  CHECK(compile.err.find(folder) != std::string::npos);
  CHECK(compile.err.find("not in use") != std::string::npos);
  CHECK(compile.err.find("KJIT_CACHE_DISABLE") != std::string::npos);  // how to go on without it
  CHECK(compile.out.empty());
  CHECK_FALSE(std::filesystem::exists(dir / "out" / "good.ptx"));  // nothing compiled in memory
  Run json = run_plain(dir, env, cache_args + " --json compile --arch sm_90 " + file);
  CHECK(json.code == 3);
  auto doc = nlohmann::json::parse(json.out, nullptr, false);
  REQUIRE(doc.is_array());
  REQUIRE(doc.size() == 1);
  CHECK(doc[0]["error"]["kind"] == "unavailable");
  CHECK(doc[0]["error"]["message"].get<std::string>().find(folder) != std::string::npos);
  for (const std::string command : {"cache stats", "cache ls", "cache verify", "cache clear"}) {
    INFO(command);
    Run cache = run_plain(dir, env, cache_args + " " + command);
    CHECK(cache.code == 3);
    CHECK(cache.out.empty());  // no table of zeros
    CHECK(cache.err.find(folder) != std::string::npos);
    CHECK(cache.err.find("not in use") != std::string::npos);
  }
  Run stats = run_plain(dir, env, cache_args + " --json cache stats");
  CHECK(stats.code == 3);
  auto s = nlohmann::json::parse(stats.out, nullptr, false);
  REQUIRE_FALSE(s.is_discarded());
  CHECK(s["error"]["kind"] == "unavailable");
  // info still names the folder.
  Run info = run_plain(dir, env, cache_args + " info");
  CHECK(info.code == 0);
  CHECK(info.out.find(folder) != std::string::npos);
}

const char* k_good = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n";
const char* k_template = "template <int N>\n__global__ void scale(float* x) { x[threadIdx.x] *= N; }\n";

}  // namespace

TEST_SUITE("cli contract") {
  TEST_CASE("diagnostics go to stderr: warm's progress and profile's notices and stdout carries the data") {
    kjit::test::TempDir dir;
    Run warm = run(dir, "warm --arch sm_90 " + k_fixture);
    CHECK(warm.code == 0);
    CHECK(warm.out.find("[1/") == std::string::npos);  // progress is not data
    CHECK(warm.err.find("[1/") != std::string::npos);
    CHECK(warm.out.find("total:") != std::string::npos);  // the table is
    Run json = run(dir, "--json warm --arch sm_90 " + k_fixture);
    CHECK(json.code == 0);
    CHECK_FALSE(nlohmann::json::parse(json.out, nullptr, false).is_discarded());

    // /bin/true makes no CUDA call: no profile, and kjit says so on stderr, never on stdout.
    Run profile = run(dir, "profile -- /bin/true");
    CHECK(profile.code == 0);
    CHECK(profile.out.find("kjit profile:") == std::string::npos);
    CHECK(profile.err.find("kjit profile:") != std::string::npos);
  }

  TEST_CASE("profile without a driver or CUPTI says what is missing") {
    if (kjit::driver_available()) {
      KJIT_SKIP("a driver is here: what may be missing is CUPTI, checked on GPU machines");
    }
    kjit::test::TempDir dir;
    Run profile = run(dir, "profile -- /bin/true");
    CHECK(profile.err.find("no CUDA driver") != std::string::npos);
    CHECK(profile.err.find("made no CUDA call") == std::string::npos);
    Run json = run(dir, "--json profile -- /bin/true");
    auto doc = nlohmann::json::parse(json.out, nullptr, false);
    REQUIRE_FALSE(doc.is_discarded());
    CHECK(doc["message"].get<std::string>().find("no CUDA driver") != std::string::npos);
  }

  TEST_CASE("exit 3 means could not run: sass without a disassembler, native without a driver") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "good.cu", k_good);
    const std::string good = (dir / "good.cu").string();
    if (!kjit::inspect::find_disassembler()) {
      Run sass = run(dir, "--json sass --arch sm_90 " + good);
      CHECK(sass.code == 3);
      auto doc = nlohmann::json::parse(sass.out, nullptr, false);
      REQUIRE_FALSE(doc.is_discarded());
      CHECK(doc["error"]["kind"] == "unavailable");
      // Each folder searched is named once.
      const std::string message = doc["error"]["message"];
      const std::string bin = (std::filesystem::path("/usr/local/cuda") / "bin").string();
      std::size_t count = 0;
      for (std::size_t pos = message.find(bin + ","); pos != std::string::npos; pos = message.find(bin + ",", pos + 1)) {
        ++count;
      }
      CHECK(count <= 1);
    }
    if (!kjit::driver_available()) {
      CHECK(run(dir, "compile " + good).code == 3);
      Run warm = run(dir, "warm " + k_fixture);
      CHECK(warm.code == 3);
      CHECK(warm.err.find("--arch") != std::string::npos);
    }
  }

  TEST_CASE("a template that was never instantiated: a warning, and the hint in ptx --kernel's error") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "scale.cu", k_template);
    kjit::test::write_file(dir / "empty.cu", "");
    const std::string scale = (dir / "scale.cu").string();
    Run compile = run(dir, "compile --arch sm_90 " + scale);
    CHECK(compile.code == 0);
    CHECK(compile.err.find("no kernels; a template needs --instantiate 'scale<") != std::string::npos);
    Run empty = run(dir, "compile --arch sm_90 " + (dir / "empty.cu").string());
    CHECK(empty.err.find("no kernels") != std::string::npos);
    Run quiet = run(dir, "-q compile --arch sm_90 " + scale);
    CHECK(quiet.err.find("no kernels") == std::string::npos);

    Run ptx = run(dir, "ptx --arch sm_90 " + scale + " --kernel 'scale<4>'");
    CHECK(ptx.code == 2);
    CHECK(ptx.err.find("--instantiate 'scale<4>'") != std::string::npos);
    Run instantiated = run(dir, "ptx --arch sm_90 " + scale + " --kernel 'scale<4>' --instantiate 'scale<4>'");
    CHECK(instantiated.code == 0);
    CHECK(instantiated.out.find(".entry") != std::string::npos);
    CHECK(instantiated.err.find("no kernels") == std::string::npos);
  }

  TEST_CASE("cache prune --older-than needs a unit: a bare number is usage and removes nothing") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "good.cu", k_good);
    REQUIRE(run(dir, "compile --arch sm_90 " + (dir / "good.cu").string()).code == 0);
    Run bare = run(dir, "cache prune --older-than 3");
    CHECK(bare.code == 2);
    CHECK(bare.err.find("unit") != std::string::npos);
    CHECK(nlohmann::json::parse(run(dir, "--json cache stats").out)["entries"] == 1);
    CHECK(run(dir, "cache prune --older-than 3d").code == 0);
    CHECK(nlohmann::json::parse(run(dir, "--json cache stats").out)["entries"] == 1);
    CHECK(run(dir, "cache prune --help").out.find("0 means no limit") != std::string::npos);
  }

  TEST_CASE("help and parse errors say what to do") {
    kjit::test::TempDir dir;
    Run unknown = run(dir, "frobnicate");
    CHECK(unknown.code == 2);
    CHECK(unknown.err.find("unknown command \"frobnicate\"") != std::string::npos);
    CHECK(unknown.err.find("kjit: error:") == 0);
    Run unknown_after_option = run(dir, "-v frobnicate");
    CHECK(unknown_after_option.err.find("unknown command \"frobnicate\"") != std::string::npos);

    Run no_dashes = run(dir, "profile /bin/true");
    CHECK(no_dashes.code == 2);
    CHECK(no_dashes.err.find("kjit profile [options] -- /bin/true") != std::string::npos);
    Run alone = run(dir, "profile");
    CHECK(alone.code == 2);
    CHECK(alone.err.find("kjit: error: no program given") == 0);

    Run version = run(dir, "--json --version");
    CHECK(version.code == 0);
    auto doc = nlohmann::json::parse(version.out, nullptr, false);
    REQUIRE_FALSE(doc.is_discarded());
    CHECK(doc.contains("kjit_version"));

    // --kernel is named only where there is one; cache explain takes --instantiate.
    for (const std::string cmd : {"compile", "diff", "resources", "cache explain"}) {
      INFO(cmd);
      Run help = run(dir, cmd + " --help");
      CHECK(help.code == 0);
      CHECK(help.out.find("--instantiate") != std::string::npos);
      CHECK(help.out.find("--kernel") == std::string::npos);
    }
    for (const std::string cmd : {"ptx", "sass"}) CHECK(run(dir, cmd + " --help").out.find("--kernel then") != std::string::npos);
    kjit::test::write_file(dir / "scale.cu", k_template);
    Run explain = run(dir, "--json cache explain --arch sm_90 " + (dir / "scale.cu").string() + " --instantiate 'scale<4>'");
    CHECK(explain.code == 0);
    CHECK(explain.out.find("scale<4>") != std::string::npos);

    // info lists what works without a GPU.
    if (!kjit::driver_available()) {
      Run info = run(dir, "info");
      for (const std::string cmd : {"compile", "ptx", "sass", "resources", "diff", "warm", "cache"}) {
        CHECK_MESSAGE(info.out.find(cmd) != std::string::npos, cmd);
      }
    }
  }

  // #40 item 16: info said it showed the NVRTC found but gave only its version, listed sass as
  // working where no disassembler was installed, and showed no toolkit root.
  TEST_CASE("info shows the NVRTC library file and the toolkit root and lists sass only with a disassembler") {
    kjit::test::TempDir dir;
    Run json = run(dir, "--json info");
    REQUIRE(json.code == 0);
    auto doc = nlohmann::json::parse(json.out, nullptr, false);
    REQUIRE_FALSE(doc.is_discarded());
    const std::string library = doc["nvrtc_library"].get<std::string>();
    CHECK(library.find("libnvrtc") != std::string::npos);
    CHECK(std::filesystem::exists(library));
    const std::string root = doc["toolkit_root"].get<std::string>();
    REQUIRE_FALSE(root.empty());
    CHECK(std::filesystem::exists(std::filesystem::path(root) / "include" / "cuda_runtime.h"));
    const auto disassembler = kjit::inspect::find_disassembler();
    CHECK(doc["disassembler"].is_null() == !disassembler);
    Run text = run(dir, "info");
    CHECK(text.out.find(library) != std::string::npos);
    CHECK(text.out.find("toolkit: " + root) != std::string::npos);
    if (disassembler) {
      CHECK(text.out.find("SASS: " + disassembler->string()) != std::string::npos);
    } else {
      CHECK(text.out.find("SASS: none") != std::string::npos);
      CHECK(doc["disassembler_error"].get<std::string>().find("nvdisasm") != std::string::npos);
    }
    if (!kjit::driver_available()) {
      const auto works = text.out.find("what works without a GPU");
      REQUIRE(works != std::string::npos);
      const std::string listed = text.out.substr(works, text.out.find("Needs a GPU", works) - works);
      CHECK_MESSAGE((listed.find("sass") != std::string::npos) == disassembler.has_value(), listed);
    }
  }

  // #40 item 16: "kjit profile --metrics bogus" exited 0 without a GPU, though the README says exit 2.
  TEST_CASE("profile --metrics with a name no chip knows is usage also without a GPU") {
    // Whether CUPTI loads, asked in a child: once loaded it stays for the process, and other cases
    // of this binary need it absent.
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) ::_exit(kjit::profile::cupti(nullptr) != nullptr ? 0 : 1);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      KJIT_SKIP("no CUPTI here: metric names cannot be checked");
    }
    kjit::test::TempDir dir;
    Run bogus = run(dir, "profile --metrics bogus__metric.sum -- /bin/true");
    CHECK(bogus.code == 2);
    CHECK(bogus.err.find("bogus__metric.sum") != std::string::npos);
    if (!kjit::driver_available()) {
      // #52 item 20: "not a metric of GH100" read as if this machine had one.
      CHECK(bogus.err.find("is not a metric of") == std::string::npos);
      CHECK(bogus.err.find("GPU chips CUPTI") != std::string::npos);
      CHECK(bogus.err.find("no GPU here") != std::string::npos);
    }
    Run json = run(dir, "--json profile --metrics sol,not_a_metric -- /bin/true");
    CHECK(json.code == 2);
    auto doc = nlohmann::json::parse(json.out, nullptr, false);
    REQUIRE_FALSE(doc.is_discarded());
    CHECK(doc["error"]["kind"] == "usage");
    // Names a chip knows pass: the program runs and profile exits as it did.
    CHECK(run(dir, "profile --metrics sol,dram__bytes_read.sum -- /bin/true").code == 0);
    CHECK(run(dir, "profile --metrics sol -- /bin/false").code == 1);
  }

  // #40 item 17: each command's --help repeated the whole exit-code paragraph and none listed the global options.
  TEST_CASE("each command's help lists the global options and the exit codes in one line") {
    kjit::test::TempDir dir;
    const std::string paragraph = "With --json every command prints exactly one JSON document";
    Run top = run(dir, "--help");
    CHECK(top.out.find(paragraph) != std::string::npos);
    for (const std::string cmd : {"info", "compile", "ptx", "sass", "resources", "diff", "warm", "tune", "profile",
                                  "cache", "cache stats", "cache ls", "cache prune", "cache explain", "cache remote ping"}) {
      INFO(cmd);
      Run help = run(dir, cmd + " --help");
      CHECK(help.code == 0);
      CHECK(help.out.find(paragraph) == std::string::npos);
      const auto global = help.out.find("Global options");
      REQUIRE(global != std::string::npos);
      for (const char* option : {"--cache-dir", "--remote", "--json", "-v,--verbose", "-q,--quiet", "--lock-timeout"}) {
        CHECK_MESSAGE(help.out.find(option, global) != std::string::npos, option);
      }
      CHECK(help.out.find("Exit code") != std::string::npos);
      CHECK(help.out.find("Exit code") == help.out.rfind("Exit code"));
    }
    // A global option after the command works as the help says.
    CHECK(run(dir, "info --json").out.find("\"kjit_version\"") != std::string::npos);
  }

  TEST_CASE("-v and KJIT_LOG=info tell a compile's cache, key, outcome, phases and entry") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "good.cu", k_good);
    const std::string good = (dir / "good.cu").string();
    const std::string cache = (dir / "cache").string();
    Run plain = run(dir, "compile --arch sm_90 " + good);
    CHECK(plain.code == 0);
    CHECK(plain.err.empty());  // nothing unasked
    const std::string key = plain.out.substr(plain.out.find("compiled ") + 9, 32);
    CHECK(run(dir, "cache clear").code == 0);

    Run verbose = run(dir, "-v compile --arch sm_90 " + good);
    CHECK(verbose.code == 0);
    CHECK(verbose.err.find("cache: " + cache) != std::string::npos);
    // One line a request, its phases from one timing.
    const auto line_at = verbose.err.find("compiled, key " + key + " (lookup");
    REQUIRE(line_at != std::string::npos);
    const std::string line = verbose.err.substr(line_at, verbose.err.find('\n', line_at) - line_at);
    for (const char* phase : {"NVRTC", "lock and store", "key hashed in"}) CHECK_MESSAGE(line.find(phase) != std::string::npos, phase);
    CHECK(verbose.err.find("entry " + cache + "/") != std::string::npos);

    Run logged = run(dir, "compile --arch sm_90 " + good, "KJIT_LOG=info");
    CHECK(logged.err.find("hit, key " + key + " (lookup") != std::string::npos);
    CHECK(logged.err.find("entry " + cache + "/") != std::string::npos);
  }

  // #34 item 14: a cache named with --cache-dir or KJIT_CACHE_DIR that kjit cannot use gave one
  // warning and exit 0 on compile, and `cache stats` printed a table of zeros.
  TEST_CASE("a cache folder the user named and kjit cannot use stops compile and cache with exit 3") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "good.cu", k_good);
    const std::string good = (dir / "good.cu").string();
    // Where no folder can be made: under /proc, and under a regular file.
    kjit::test::write_file(dir / "a-file", "not a folder\n");
    for (const std::string& folder : {std::string("/proc/kjit-nope"), (dir / "a-file" / "cache").string()}) {
      check_named_cache_refused(dir, "", "--cache-dir " + folder, folder, good);
      check_named_cache_refused(dir, "KJIT_CACHE_DIR=" + folder, "", folder, good);
    }
    // A folder everyone may write into: anyone could plant a kernel there.
    const auto open = dir / "open";
    std::filesystem::create_directory(open);
    ::chmod(open.c_str(), 0777);
    check_named_cache_refused(dir, "", "--cache-dir " + open.string(), open.string(), good);
    check_named_cache_refused(dir, "KJIT_CACHE_DIR=" + open.string(), "", open.string(), good);
    // A folder of another user's, and one this user may not create (root may create anywhere: an
    // unprivileged user meets it).
    if (::geteuid() == 0) {
      const auto theirs = dir / "theirs";
      std::filesystem::create_directory(theirs);
      REQUIRE(::chown(theirs.c_str(), 54322, 54322) == 0);
      ::chmod(theirs.c_str(), 0755);
      check_named_cache_refused(dir, "", "--cache-dir " + theirs.string(), theirs.string(), good);

      ::chmod(dir.path().c_str(), 0777);  // the unprivileged user writes its stderr and outputs here
      const auto closed = dir / "closed";
      std::filesystem::create_directory(closed);
      ::chmod(closed.c_str(), 0755);  // root's: the user may not make a folder inside
      const std::string as_user = "setpriv --reuid=54321 --regid=54321 --clear-groups";
      check_named_cache_refused(dir, as_user, "--cache-dir " + (closed / "cache").string(),
                                (closed / "cache").string(), good);
      check_named_cache_refused(dir, as_user + " env KJIT_CACHE_DIR=" + (closed / "cache").string(), "",
                                (closed / "cache").string(), good);
    } else {
      MESSAGE("not root: another user's folder and the unprivileged user's case need setuid");
    }
  }

  TEST_CASE("the default cache folder unusable: compile warns and goes on without it and cache says it is not in use") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "good.cu", k_good);
    const std::string good = (dir / "good.cu").string();
    const auto folder = dir / "xdg" / "kjit";  // the default: $XDG_CACHE_HOME/kjit
    std::filesystem::create_directories(folder);
    ::chmod(folder.c_str(), 0777);
    const std::string env = "env -u KJIT_CACHE_DIR XDG_CACHE_HOME=" + (dir / "xdg").string();
    Run compile = run_plain(dir, env, "compile --arch sm_90 -o " + (dir / "out").string() + " " + good);
    CHECK(compile.code == 0);
    CHECK(compile.err.find("kjit: warn") != std::string::npos);
    CHECK(compile.err.find(folder.string()) != std::string::npos);
    CHECK(compile.err.find("compiled in memory") != std::string::npos);
    CHECK(kjit::test::read_file(dir / "out" / "good.ptx").find(".entry k") != std::string::npos);
    CHECK(std::filesystem::is_empty(folder));  // nothing kept there
    Run json = run_plain(dir, env, "--json compile --arch sm_90 " + good);
    CHECK(json.code == 0);
    auto doc = nlohmann::json::parse(json.out, nullptr, false);
    REQUIRE(doc.is_array());
    CHECK(doc[0]["outcome"] == "compiled");
    Run stats = run_plain(dir, env, "cache stats");
    CHECK(stats.code == 3);
    CHECK(stats.out.empty());
    CHECK(stats.err.find(folder.string() + " is not in use") != std::string::npos);
  }
}
