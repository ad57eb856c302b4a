// kjit warm, end to end in real processes: warming a manifest into an empty cache, then a fresh
// process looking up every manifest kernel through the loader compiles nothing, also from a
// copy of the cache and from a read-only one (as an unprivileged user); a failing kernel gives
// exit code 1 and a table while the others are still compiled; native without a GPU is a clear
// "could not run" error (exit 3).
#include "support/helpers.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace {

const std::string k_kjit = std::string(KJIT_BINARY_DIR) + "/cli/kjit";
const std::string k_probe = std::string(KJIT_TEST_TOOLS_DIR) + "/kjit_loader_probe";
const std::string k_fixture = std::string(KJIT_SOURCE_DIR) + "/tests/data/warm_fixture";
const std::string k_shipped = std::string(KJIT_SOURCE_DIR) + "/kernels_src";

using Run = kjit::test::CommandResult;
using kjit::test::run_command;
Run run(const std::string& command) { return run_command(command); }

// Runs `command` through /bin/sh as uid 65534 when this process is root (root ignores
// permission bits), else as it is.
Run run_unprivileged(const std::string& command) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    ::dup2(fds[1], STDOUT_FILENO);
    if (::geteuid() == 0 && (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0)) {
      ::_exit(99);
    }
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(98);
  }
  ::close(fds[1]);
  Run r;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) r.out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

void make_read_only(const std::filesystem::path& dir) {
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    ::chmod(e.path().c_str(), e.is_directory() ? 0555 : 0444);
  }
  ::chmod(dir.c_str(), 0555);
}

// The probe's counters, checked to be all disk hits.
void check_all_hits(const Run& probe, int lookups, const std::string& where) {
  INFO(where << ": " << probe.out);
  REQUIRE(probe.code == 0);
  auto j = nlohmann::json::parse(probe.out);
  CHECK(j["lookups"] == lookups);
  CHECK(j["disk_hits"] == lookups);
  CHECK(j["compiles"] == 0);
  CHECK(j["misses"] == 0);
  CHECK(j["damaged"] == 0);
  for (const auto& w : j["warnings"]) CHECK(w.get<std::string>().find("damage") == std::string::npos);
}

}  // namespace

TEST_SUITE("cli warm") {
  TEST_CASE("warm then a fresh loader process compiles nothing from the cache or a copy or a read-only copy") {
    kjit::test::TempDir dir;
    ::chmod(dir.path().c_str(), 0755);  // traversable by the unprivileged probe
    auto cache = dir / "cache";
    Run warm = run(k_kjit + " --cache-dir " + cache.string() + " --json warm " + k_fixture + " " + k_shipped +
                   " --arch sm_90 -j 2 2>&1");
    INFO(warm.out);
    REQUIRE(warm.code == 0);
    auto report = nlohmann::json::parse(warm.out);
    const int items = static_cast<int>(report["items"].size());
    CHECK(items >= 5);  // the fixture's 5 kernel variants, plus whatever kernels_src ships
    CHECK(report["compiled"] == items);
    CHECK(report["failed"] == 0);

    // A fresh process through the loader: only disk hits.
    check_all_hits(run(k_probe + " " + cache.string() + " sm_90 " + k_fixture + " " + k_shipped), items, "same cache");

    // Warming again finds everything cached.
    Run again = run(k_kjit + " --cache-dir " + cache.string() + " --json warm " + k_fixture + " " + k_shipped +
                    " --arch sm_90 2>&1");
    REQUIRE(again.code == 0);
    CHECK(nlohmann::json::parse(again.out)["cached"] == items);

    // Copied to another directory.
    auto copy = dir / "copy";
    std::filesystem::copy(cache, copy, std::filesystem::copy_options::recursive);
    check_all_hits(run(k_probe + " " + copy.string() + " sm_90 " + k_fixture + " " + k_shipped), items, "copy");

    // Read-only, as an unprivileged user.
    make_read_only(copy);
    check_all_hits(run_unprivileged(k_probe + " " + copy.string() + " sm_90 " + k_fixture + " " + k_shipped), items,
                   "read-only copy");
  }

  TEST_CASE("warm exits 1 with a table when one kernel fails and still compiles the others") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "kernels/kjit.json", R"({"kjit_manifest": 1, "kernels": [
      {"file": "good.cu", "variants": [{"name": "a", "defines": ["V=1"]}, {"name": "b", "defines": ["V=2"]}]},
      {"file": "bad.cu"},
      {"file": "other.cu"}]})");
    kjit::test::write_file(dir / "kernels/good.cu",
                           "extern \"C\" __global__ void good(float* x) { x[threadIdx.x] *= V; }\n");
    kjit::test::write_file(dir / "kernels/bad.cu", "// broken on purpose\nextern \"C\" __global__ void bad(float* x) {\n"
                                                   "  x[0] = undeclared_name;\n}\n");
    kjit::test::write_file(dir / "kernels/other.cu", "extern \"C\" __global__ void other(int* x) { x[0] = 7; }\n");
    Run r = run(k_kjit + " --cache-dir " + (dir / "cache").string() + " warm " + (dir / "kernels").string() +
                " --arch sm_90,sm_80 -j 2 2>&1");
    INFO(r.out);
    CHECK(r.code == 1);
    CHECK(r.out.find("kernel") != std::string::npos);
    CHECK(r.out.find("total: 8 items: 6 compiled, 0 already cached, 2 failed") != std::string::npos);
    // Each failure with NVRTC's message naming the real file and the source excerpt.
    CHECK(r.out.find("bad.cu(3): error") != std::string::npos);
    CHECK(r.out.find(">    3 |   x[0] = undeclared_name;") != std::string::npos);

    Run json = run(k_kjit + " --cache-dir " + (dir / "cache").string() + " --json warm " +
                   (dir / "kernels").string() + " --arch sm_90 2>/dev/null");
    CHECK(json.code == 1);
    auto j = nlohmann::json::parse(json.out);
    CHECK(j["cached"] == 3);
    CHECK(j["failed"] == 1);
    for (const auto& item : j["items"]) {
      CHECK(item["status"] == (item["file"] == "bad.cu" ? "failed" : "cached"));
    }
  }

  TEST_CASE("warm errors: a bad manifest and an unknown arch exit 2 and native without a GPU exits 3") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "k/kjit.json", R"({"kjit_manifest": 1, "kernels": [{"file": "a.cu", "defnies": []}]})");
    Run bad = run(k_kjit + " --cache-dir " + (dir / "cache").string() + " warm " + (dir / "k").string() +
                  " --arch sm_90 2>&1");
    CHECK(bad.code == 2);
    CHECK(bad.out.find("unknown key \"defnies\"") != std::string::npos);
    CHECK(run(k_kjit + " warm " + k_fixture + " --arch sm_5 2>&1").code == 2);
    CHECK(run(k_kjit + " warm --help").code == 0);
    Run native = run(k_kjit + " --cache-dir " + (dir / "cache").string() + " warm " + k_fixture + " 2>&1");
    if (native.code != 0) {  // no GPU here: could not run (as compile says), and the error says to name the archs
      CHECK(native.code == 3);
      CHECK(native.out.find("--arch") != std::string::npos);
    }
  }

  // #40 item 13: "kjit warm x.cu" gave a JSON parse error and "kjit warm ." "No such file".
  TEST_CASE("warm on a source file or a folder without a kjit.json says what warm takes and points to compile") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "x.cu", "extern \"C\" __global__ void x(float* p) { p[0] = 1; }\n");
    std::filesystem::create_directories(dir / "empty");
    const std::string warm = "cd " + dir.path().string() + " && " + k_kjit + " --cache-dir " + (dir / "cache").string();
    for (const std::string& source : {std::string("x.cu"), (dir / "x.cu").string()}) {
      Run r = run(warm + " warm " + source + " --arch sm_90 2>&1");
      INFO(r.out);
      CHECK(r.code == 2);
      CHECK(r.out.find(source) != std::string::npos);
      CHECK(r.out.find("kjit compile") != std::string::npos);
      CHECK(r.out.find("kjit.json") != std::string::npos);
      CHECK(r.out.find("invalid JSON") == std::string::npos);
    }
    for (const std::string& folder : {std::string("."), std::string("empty"), (dir / "empty").string()}) {
      Run r = run(warm + " warm " + folder + " --arch sm_90 2>&1");
      INFO(r.out);
      CHECK(r.code == 2);
      CHECK(r.out.find("holds no kjit.json") != std::string::npos);
      CHECK(r.out.find("kjit compile") != std::string::npos);
      CHECK(r.out.find("No such file") == std::string::npos);
      Run json = run(warm + " --json warm " + folder + " --arch sm_90 2>/dev/null");
      CHECK(json.code == 2);
      CHECK(nlohmann::json::parse(json.out).at("error").at("kind") == "usage");
    }
    // A path that does not exist is still an input that cannot be read (exit 1), naming it.
    Run missing = run(warm + " warm nowhere.json --arch sm_90 2>&1");
    CHECK(missing.code == 1);
    CHECK(missing.out.find("nowhere.json") != std::string::npos);
  }

  // #40 item 16: docs/manifest.md's example could not compile, and left out the variants' default.
  // Its manifest and its kernel, taken from the page, warmed for every variant.
  TEST_CASE("docs/manifest.md's example manifest and kernel warm for every variant") {
    const std::string page = kjit::test::read_file(std::filesystem::path(KJIT_SOURCE_DIR) / "docs" / "manifest.md");
    auto block = [&page](const std::string& fence) {
      const auto start = page.find("```" + fence + "\n");
      REQUIRE_MESSAGE(start != std::string::npos, "no ```" << fence << " block in docs/manifest.md");
      const auto body = start + fence.size() + 4;
      return page.substr(body, page.find("```", body) - body);
    };
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "kernels" / "kjit.json", block("json"));
    const std::string cuda = block("cuda");
    REQUIRE(cuda.rfind("// scale.cu\n", 0) == 0);
    kjit::test::write_file(dir / "kernels" / "scale.cu", cuda);
    Run r = run(k_kjit + " --cache-dir " + (dir / "cache").string() + " --json warm " + (dir / "kernels").string() +
                " --arch sm_90 2>&1 >" + (dir / "out.json").string());
    INFO(r.out);
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(kjit::test::read_file(dir / "out.json"));
    CHECK(j["failed"] == 0);
    CHECK(j["items"].size() == 2);  // its two variants, for sm_90
    CHECK(page.find("gets the first one listed") != std::string::npos);  // the default variant, said
  }
}
