// One storage floor in a process (#50 item 2): a program that links the two shared libraries,
// libkjit.so and libkjit_tools.so, as host programs do (public API only, never kjit_internal),
// uses the cache through each, then forks. The floors (core/system/, core/cache/) live in libkjit
// alone, so the process has one fork-handler registry and one worker list: every fork handler kjit
// registers with the C library comes from libkjit.so, once, however many stores and services the
// two libraries open; a libkjit_tools with a private copy of the floors registers its own. The
// registrations are seen where glibc takes them: this program defines __register_atfork (the
// function pthread_atfork calls with the caller's DSO handle), which the libraries bind to, and
// forwards to the C library's. The static side, that libkjit_tools.so defines no function or data
// of the floors, is the ctest build/libkjit_tools_has_no_floor. A child that hangs is killed after
// a bound far above any compile: a hang is the failure, never a time.
#include <kjit/kjit.hpp>
#include <kjit/tools.hpp>

#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "support/wait_process.hpp"

#include <doctest/doctest.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <thread>

using namespace std::chrono_literals;

namespace {

// The DSO handle of every fork-handler registration this process made, in order (no allocation:
// glibc calls this under its own lock).
std::array<void*, 64> g_registrants{};
std::atomic<int> g_registrations{0};

using RegisterAtFork = int (*)(void (*)(), void (*)(), void (*)(), void*);

// The file of the DSO `handle` belongs to ("" when none).
std::string dso_file(void* handle) {
  Dl_info info{};
  return handle != nullptr && ::dladdr(handle, &info) != 0 && info.dli_fname != nullptr ? info.dli_fname : "";
}

bool is_kjit_library(const std::string& file, const char* name) {
  const auto slash = file.rfind('/');
  return file.compare(slash == std::string::npos ? 0 : slash + 1, std::strlen(name), name) == 0;
}

// The registrations made by kjit's two libraries: (from libkjit.so, from libkjit_tools.so).
std::pair<int, int> kjit_registrations() {
  int core = 0, tools = 0;
  const int n = std::min<int>(g_registrations.load(), static_cast<int>(g_registrants.size()));
  for (int i = 0; i < n; ++i) {
    const std::string file = dso_file(g_registrants[static_cast<std::size_t>(i)]);
    if (is_kjit_library(file, "libkjit_tools.so")) {
      ++tools;
    } else if (is_kjit_library(file, "libkjit.so")) {
      ++core;
    }
  }
  return {core, tools};
}

// A kernel of its own for each tag and run: a different key every time (random, so that no cache
// of an earlier run answers it).
kjit::Program program(const std::string& tag) {
  static const std::string run = std::to_string(std::random_device{}());
  return kjit::Program("floor_" + tag + ".cu",
                       "extern \"C\" __global__ void k_" + tag + "(float* x, int n) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i < n) x[i] = x[i] * 1.5f + " + run + ".0f;\n}\n");
}

const kjit::CompileOptions k_sm90{.arch = kjit::Arch::sm(90)};

}  // namespace

// pthread_atfork (libc_nonshared.a, linked into each library) calls this with its library's
// __dso_handle. The executable's definition comes first in the lookup: the libraries bind to it.
extern "C" int __register_atfork(void (*prepare)(), void (*parent)(), void (*child)(), void* dso_handle) {
  static const auto real = reinterpret_cast<RegisterAtFork>(::dlvsym(RTLD_NEXT, "__register_atfork", "GLIBC_2.3.2"));
  const int i = g_registrations.fetch_add(1);
  if (i < static_cast<int>(g_registrants.size())) g_registrants[static_cast<std::size_t>(i)] = dso_handle;
  return real != nullptr ? real(prepare, parent, child, dso_handle) : ENOSYS;
}

TEST_SUITE("libraries") {
  TEST_CASE("a process with libkjit and libkjit_tools has one storage floor and a forked child compiles") {
    kjit::test::TempDir tmp;
    const auto cache = tmp / "cache";
    kjit::RuntimeConfig config;
    config.cache_dir = cache;
    config.log = [](kjit::LogLevel, std::string_view) {};

    // The cache through libkjit: a compile writes its entry and starts the worker (accounting).
    kjit::Runtime rt(config);
    REQUIRE(rt.compile(program("parent"), k_sm90).outcome == kjit::Outcome::compiled);
    // The cache through libkjit_tools: a store of its own on the same folder, its maintenance.
    kjit::Cache admin(cache);
    CHECK(admin.list().size() == 1);
    CHECK(admin.verify().damaged.empty());
    CHECK(admin.stats().entries == 1);

    // One registry: the fork handlers of the Runtime's service, its store and worker, and the
    // tools' store all went to one registration with the C library, from libkjit.so.
    const auto [core, tools] = kjit_registrations();
    if (core == 0 && tools == 0) {
      KJIT_SKIP("this C library's pthread_atfork does not reach __register_atfork through the libraries' "
                "PLT (glibc's libc_nonshared.a does): the registrations cannot be seen here");
    }
    CHECK_MESSAGE(tools == 0, "libkjit_tools.so registered fork handlers of its own " << tools
                                  << " time(s): a second copy of the floors (core/system/at_fork)");
    CHECK_MESSAGE(core == 1, "libkjit.so registered fork handlers " << core << " time(s), not once");
    REQUIRE(g_registrations.load() <= static_cast<int>(g_registrants.size()));

    // A child compiles through the parent's Runtime (a fresh worker of its own, none of the
    // parent's locks held), sees its entry through libkjit_tools, and exits at once.
    std::fflush(stdout);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::dup2(::open("/dev/null", O_WRONLY | O_CLOEXEC), 1);  // the test runner's exit output, not twice
      int code = 1;
      try {
        const kjit::CompileResult r = rt.compile(program("child"), k_sm90);
        code = r.outcome != kjit::Outcome::compiled || r.cubin.empty() ? 2
               : kjit::Cache(cache).list().size() != 2                  ? 3
               : kjit_registrations().second != 0                       ? 4
                                                                        : 0;
      } catch (...) {
        code = 5;
      }
      std::exit(code);
    }
    const auto status = kjit::test::wait_for(pid, 120s);
    REQUIRE_MESSAGE(status.has_value(), "the child hung (killed)");
    CHECK_MESSAGE(*status == 0, "the child failed: " << *status
                                    << " (2: no compile, 3: its entry not seen through libkjit_tools, "
                                       "4: fork handlers from libkjit_tools, 5: an exception)");
    // The child's entry is on the disk: both libraries see it.
    CHECK(rt.compile(program("child"), k_sm90).outcome == kjit::Outcome::hit);
    CHECK(kjit::Cache(cache).list().size() == 2);
    CHECK(kjit_registrations() == std::pair{1, 0});
  }
}
