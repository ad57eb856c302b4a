// fork() after kjit::Runtime compiled (#40 item 18): a child compiles at once, exits at once
// (std::exit: the exit handlers run, as Python's sys.exit runs them) and loses nothing of its
// own; also while a thread of the parent compiles at the fork, and for a key the parent has in
// flight. Real fork()s of this process, NVRTC compiles for sm_90 (no GPU needed). A child that
// hangs is killed after a bound far above any compile: a hang is the failure, never a time.
#include <kjit/kjit.hpp>

#include "core/cache/store.hpp"
#include "support/temp_dir.hpp"
#include "tests/unit/test_cache_support.hpp"
#include "support/store_parts.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {

// A kernel of its own for each tag: a different key every time.
kjit::Program program(const std::string& tag) {
  return kjit::Program("fork_" + tag + ".cu", "extern \"C\" __global__ void k_" + tag +
                                                  "(float* x, int n) {\n  int i = blockIdx.x * blockDim.x + "
                                                  "threadIdx.x;\n  if (i < n) x[i] = x[i] * 3.0f + " +
                                                  std::to_string(tag.size()) + ";\n}\n");
}

const kjit::CompileOptions k_sm90{.arch = kjit::Arch::sm(90)};

kjit::RuntimeConfig config_in(const std::filesystem::path& cache) {
  kjit::RuntimeConfig c;
  c.cache_dir = cache;
  c.log = [](kjit::LogLevel, std::string_view) {};
  return c;
}

// Forks; the child compiles `tag` through `rt` and ends with std::exit (0 when it compiled).
pid_t fork_compiler(kjit::Runtime& rt, const std::string& tag) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::fflush(stdout);
    ::dup2(::open("/dev/null", O_WRONLY | O_CLOEXEC), 1);  // the test runner's own exit output, not twice
    int code = 1;
    try {
      const kjit::CompileResult r = rt.compile(program(tag), k_sm90);
      code = r.cubin.empty() ? 2 : 0;
    } catch (...) {
      code = 3;
    }
    std::exit(code);
  }
  return pid;
}

// The store's persistent count of compiles in `cache`.
std::uint64_t persistent_compiles(const std::filesystem::path& cache) {
  kjit::cache::Store store({cache.string()});
  return kjit::test::stats_of(store).read().compiles;
}

}  // namespace

TEST_SUITE("Runtime fork") {
  TEST_CASE("a child forked 0 to 100 ms after a compile compiles and exits and keeps its own work") {
    kjit::test::TempDir tmp;
    kjit::Runtime rt(config_in(tmp / "cache"));
    REQUIRE(rt.compile(program("parent"), k_sm90).outcome == kjit::Outcome::compiled);
    std::mt19937 random(std::random_device{}());
    const std::vector<int> delays = {0, 1, 5, 20, 50, 100};
    for (std::size_t i = 0; i < delays.size(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(delays[i]));
      const std::string tag = "child" + std::to_string(i) + "_" + std::to_string(random());
      const pid_t pid = fork_compiler(rt, tag);
      const auto status = kjit::test::wait_for(pid, 120s);
      REQUIRE_MESSAGE(status.has_value(), "the child forked " << delays[i] << " ms after the compile hung (killed)");
      CHECK_MESSAGE(*status == 0, "the child forked " << delays[i] << " ms after the compile failed: " << *status);
      // Its entry is on the disk: the parent hits it.
      CHECK(rt.compile(program(tag), k_sm90).outcome == kjit::Outcome::hit);
    }
    // Each child flushed its own compile into the persistent stats (its worker ran at its exit),
    // and none flushed the parent's: the parent's one compile is flushed by the parent.
    rt.flush_stats();
    CHECK(persistent_compiles(tmp / "cache") == 1 + delays.size());
  }

  TEST_CASE("a child forked while a thread of the parent compiles compiles and exits") {
    kjit::test::TempDir tmp;
    kjit::Runtime rt(config_in(tmp / "cache"));
    REQUIRE(rt.compile(program("warm"), k_sm90).outcome == kjit::Outcome::compiled);
    std::atomic<bool> stop{false};
    std::atomic<int> compiled{0};
    std::thread compiler([&] {
      for (int i = 0; !stop; ++i) {
        rt.compile(program("thread" + std::to_string(i)), k_sm90);
        ++compiled;
      }
    });
    for (int i = 0; i < 6; ++i) {
      while (compiled < i) std::this_thread::sleep_for(1ms);  // forks land at different points of compiles
      std::this_thread::sleep_for(std::chrono::milliseconds(7 * i));
      const pid_t pid = fork_compiler(rt, "busy" + std::to_string(i));
      const auto status = kjit::test::wait_for(pid, 120s);
      if (!status) {
        stop = true;
        compiler.join();
      }
      REQUIRE_MESSAGE(status.has_value(), "child " << i << " hung (killed)");
      CHECK(*status == 0);
    }
    stop = true;
    compiler.join();
  }

  TEST_CASE("a child compiles a key its parent has in flight and never waits for the parent's thread") {
    kjit::test::TempDir tmp;
    kjit::Runtime rt(config_in(tmp / "cache"));
    REQUIRE(rt.compile(program("warm"), k_sm90).outcome == kjit::Outcome::compiled);
    for (int attempt = 0; attempt < 4; ++attempt) {
      const std::string tag = "inflight" + std::to_string(attempt);
      std::thread parent_compile([&] { rt.compile(program(tag), k_sm90); });
      std::this_thread::sleep_for(std::chrono::milliseconds(2 + 10 * attempt));  // within its compile, mostly
      const pid_t pid = fork_compiler(rt, tag);
      parent_compile.join();
      const auto status = kjit::test::wait_for(pid, 120s);
      REQUIRE_MESSAGE(status.has_value(), "attempt " << attempt << ": the child waited for its parent's compile (killed)");
      CHECK(*status == 0);
    }
  }
}
