// The disk cache on the request path: damage, degraded storage, bounded waits, configuration.
#include <kjit/tools.hpp>

#include "core/system/file_lock.hpp"
#include "core/system/background.hpp"
#include "core/cache/store.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <csignal>
#include <cstdlib>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <mutex>
#include <vector>

namespace {

const char* k_src = R"(
extern "C" __global__ void twice(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 2.0f * x[i];
}
)";

struct Logged {
  std::mutex mutex;
  std::vector<std::pair<kjit::LogLevel, std::string>> lines;
  int count(kjit::LogLevel level) {
    std::lock_guard lock(mutex);
    int n = 0;
    for (auto& l : lines) n += l.first == level;
    return n;
  }
};

kjit::RuntimeConfig logging_config(const std::filesystem::path& cache, Logged& logged) {
  kjit::RuntimeConfig c;
  c.cache_dir = cache;
  c.log_level = kjit::LogLevel::debug;
  c.log = [&logged](kjit::LogLevel level, std::string_view m) {
    std::lock_guard lock(logged.mutex);
    logged.lines.emplace_back(level, std::string(m));
  };
  return c;
}

// A child process that takes the store's lock for `key`, proves progress as a compiling holder
// does (Background::heartbeat), tells the parent, then holds it for `hold_ms` (0: until killed).
pid_t holder(const std::filesystem::path& cache, const kjit::cache::Key& key, int hold_ms) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    kjit::cache::Store store({cache.string()});
    auto lock = store.lock(key, std::chrono::milliseconds(0));
    if (!lock) ::_exit(1);
    kjit::system::Background background;
    auto heartbeat = background.heartbeat(lock->fd(), std::chrono::milliseconds(100));
    if (::write(fds[1], "y", 1) != 1) ::_exit(1);
    if (hold_ms == 0) {
      for (;;) ::pause();
    }
    ::usleep(static_cast<useconds_t>(hold_ms) * 1000);
    ::_exit(0);
  }
  ::close(fds[1]);
  char c = 0;
  REQUIRE(::read(fds[0], &c, 1) == 1);
  ::close(fds[0]);
  return pid;
}

std::filesystem::path only_entry(const std::filesystem::path& cache) {
  for (const auto& e : std::filesystem::recursive_directory_iterator(cache)) {
    if (e.path().extension() == ".kjit") return e.path();
  }
  FAIL("no entry in " << cache);
  return {};
}

}  // namespace

TEST_SUITE("Runtime cache") {
  TEST_CASE("a damaged entry is a miss with one warning and is rewritten and the driver never sees it") {
    kjit::test::TempDir dir;
    Logged logged;
    auto c = logging_config(dir.path() / "cache", logged);
    kjit::Program p("twice.cu", k_src);
    kjit::CompileOptions o{.arch = kjit::Arch::sm(90)};
    auto good = kjit::Runtime(c).compile(p, o);
    auto entry = only_entry(c.cache_dir);
    std::string bytes = kjit::test::read_file(entry);
    bytes[bytes.size() / 2] ^= 0x10;  // one bit, in the middle of the cubin
    kjit::test::write_file(entry, bytes);

    kjit::Runtime rt(c);
    auto again = rt.compile(p, o);
    CHECK(again.outcome == kjit::Outcome::compiled);
    CHECK(again.cubin == good.cubin);
    CHECK(logged.count(kjit::LogLevel::warn) == 1);
    CHECK(rt.stats().damaged == 1);
    CHECK(kjit::Runtime(c).compile(p, o).outcome == kjit::Outcome::hit);  // rewritten whole
  }

  // #42 item 6: the folder is made by the first write, not by the Runtime's construction.
  TEST_CASE("a Runtime makes a cache folder that is not there with its first compile, not before") {
    kjit::test::TempDir dir;
    Logged logged;
    auto c = logging_config(dir / "cache", logged);
    kjit::Runtime rt(c);
    CHECK_FALSE(std::filesystem::exists(dir / "cache"));
    const kjit::Program p("first.cu", k_src);
    CHECK(rt.compile(p, {.arch = kjit::Arch::sm(90)}).outcome == kjit::Outcome::compiled);
    CHECK(std::filesystem::is_directory(dir / "cache"));
    CHECK(std::filesystem::exists(dir / "cache" / "CACHEDIR.TAG"));
    CHECK(kjit::Runtime(c).compile(p, {.arch = kjit::Arch::sm(90)}).outcome == kjit::Outcome::hit);
    CHECK(logged.count(kjit::LogLevel::warn) == 0);
  }

  TEST_CASE("an unusable cache directory still yields a kernel and one warning and no files") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "not-a-directory", "x");
    Logged logged;
    auto c = logging_config(dir / "not-a-directory" / "cache", logged);
    kjit::Runtime rt(c);
    for (int i = 0; i < 3; ++i) {
      auto r = rt.compile(kjit::Program("twice.cu", std::string(k_src) + "//" + std::to_string(i)),
                          {.arch = kjit::Arch::sm(90)});
      CHECK(r.has_cubin());
      CHECK(r.outcome == kjit::Outcome::compiled);
    }
    CHECK(logged.count(kjit::LogLevel::warn) == 1);
    CHECK(rt.stats().store_failures == 3);
  }

  // #34 item 14: whether an unusable folder stops the Runtime is the config's to say.
  TEST_CASE("cache_required: a named folder that cannot be used throws UnavailableError and the default one warns") {
    kjit::test::TempDir dir;
    const auto open = dir / "open";  // writable by everyone: refused
    std::filesystem::create_directory(open);
    ::chmod(open.c_str(), 0777);
    Logged logged;
    auto c = logging_config(open, logged);
    CHECK_NOTHROW(kjit::Runtime{c});  // never (the default): one warning, compiles in memory
    CHECK(logged.count(kjit::LogLevel::warn) == 1);
    for (auto required : {kjit::CacheRequired::when_named, kjit::CacheRequired::always}) {
      c.cache_required = required;
      CHECK_THROWS_WITH_AS(kjit::Runtime{c}, doctest::Contains((open.string() + " is not in use").c_str()), kjit::UnavailableError);
    }
    c.cache_disabled = true;  // no cache asked for: nothing to require
    CHECK_NOTHROW(kjit::Runtime{c});
    c.cache_disabled = false;
    {
      // Named by KJIT_CACHE_DIR, the config's own folder empty.
      kjit::test::ScopedEnv env("KJIT_CACHE_DIR", open.string());
      c.cache_dir.clear();
      c.cache_required = kjit::CacheRequired::when_named;
      CHECK_THROWS_AS(kjit::Runtime{c}, kjit::UnavailableError);
    }
    {
      // The default folder ($XDG_CACHE_HOME/kjit), unusable: when_named goes on, always does not.
      kjit::test::ScopedEnv env("KJIT_CACHE_DIR", nullptr);
      const auto xdg = dir / "xdg";
      std::filesystem::create_directories(xdg / "kjit");
      ::chmod((xdg / "kjit").c_str(), 0777);
      kjit::test::ScopedEnv home("XDG_CACHE_HOME", xdg.string());
      c.cache_dir.clear();
      c.cache_required = kjit::CacheRequired::when_named;
      kjit::Runtime rt(c);
      CHECK(rt.compile(kjit::Program("twice.cu", k_src), {.arch = kjit::Arch::sm(90)}).has_cubin());
      c.cache_required = kjit::CacheRequired::always;
      CHECK_THROWS_AS(kjit::Runtime{c}, kjit::UnavailableError);
    }
    // A folder it can use is required without a word.
    c.cache_dir = dir / "mine";
    CHECK_NOTHROW(kjit::Runtime{c});
  }

  TEST_CASE("a lock held by someone else is waited for with progress and then compiled without") {
    kjit::test::TempDir dir;
    Logged logged;
    auto c = logging_config(dir.path() / "cache", logged);
    c.lock_timeout = std::chrono::milliseconds(600);
    c.wait_progress_every = std::chrono::milliseconds(100);
    kjit::Runtime rt(c);
    kjit::Program p("twice.cu", k_src);
    kjit::CompileOptions o{.arch = kjit::Arch::sm(90)};
    auto key = kjit::cache::Key::from_hex(rt.explain(p, o).key);
    REQUIRE(key);
    kjit::cache::Store store({c.cache_dir});
    auto held = store.lock(*key, std::chrono::milliseconds(100));  // another holder (own open file)
    REQUIRE(held);
    auto t0 = std::chrono::steady_clock::now();
    auto r = rt.compile(p, o);
    auto waited = std::chrono::steady_clock::now() - t0;
    CHECK(r.outcome == kjit::Outcome::compiled);
    CHECK(waited >= std::chrono::milliseconds(500));
    int progress = 0;
    for (auto& [level, line] : logged.lines) progress += line.find("waiting") != std::string::npos;
    CHECK(progress >= 2);
  }

  TEST_CASE("a holder that is alive but stopped is left after the stale bound and the waiter compiles") {
    kjit::test::TempDir dir;
    Logged logged;
    auto c = logging_config(dir.path() / "cache", logged);
    c.lock_timeout = std::chrono::minutes(2);
    c.lock_stale_after = std::chrono::milliseconds(1500);
    kjit::Runtime rt(c);
    kjit::Program p("twice.cu", k_src);
    kjit::CompileOptions o{.arch = kjit::Arch::sm(90)};
    auto key = kjit::cache::Key::from_hex(rt.explain(p, o).key);
    REQUIRE(key);
    const pid_t pid = holder(c.cache_dir, *key, 0);
    REQUIRE(::kill(pid, SIGSTOP) == 0);  // alive, holding the lock, no longer beating
    const auto t0 = std::chrono::steady_clock::now();
    auto r = rt.compile(p, o);
    const auto waited = std::chrono::steady_clock::now() - t0;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    CHECK(r.outcome == kjit::Outcome::compiled);
    CHECK(waited >= std::chrono::milliseconds(1500));
    CHECK(waited < std::chrono::seconds(60));  // far below the 2 minute bound it used to wait out
    int stalled = 0;
    for (auto& [level, line] : logged.lines) {
      stalled += level == kjit::LogLevel::warn && line.find("no progress") != std::string::npos;
    }
    CHECK(stalled == 1);
  }

  TEST_CASE("a holder that proves progress is waited for past the stale bound") {
    kjit::test::TempDir dir;
    Logged logged;
    auto c = logging_config(dir.path() / "cache", logged);
    c.lock_timeout = std::chrono::minutes(2);
    c.lock_stale_after = std::chrono::milliseconds(800);
    kjit::Runtime rt(c);
    kjit::Program p("twice.cu", k_src);
    kjit::CompileOptions o{.arch = kjit::Arch::sm(90)};
    auto key = kjit::cache::Key::from_hex(rt.explain(p, o).key);
    REQUIRE(key);
    const pid_t pid = holder(c.cache_dir, *key, 3000);
    const auto t0 = std::chrono::steady_clock::now();
    auto r = rt.compile(p, o);
    const auto waited = std::chrono::steady_clock::now() - t0;
    ::waitpid(pid, nullptr, 0);
    CHECK(r.outcome == kjit::Outcome::compiled);
    CHECK(waited >= std::chrono::milliseconds(2500));  // the whole hold, not the stale bound
    for (auto& [level, line] : logged.lines) CHECK(line.find("no progress") == std::string::npos);
  }

  TEST_CASE("KJIT_LOCK_TIMEOUT and KJIT_LOCK_STALE_AFTER are read as durations") {
    setenv("KJIT_LOCK_TIMEOUT", "3s", 1);
    setenv("KJIT_LOCK_STALE_AFTER", "5m", 1);
    auto c = kjit::RuntimeConfig::from_environment();
    CHECK(c.lock_timeout == std::chrono::seconds(3));
    CHECK(c.lock_stale_after == std::chrono::minutes(5));
    setenv("KJIT_LOCK_STALE_AFTER", "soon", 1);
    CHECK_THROWS_WITH_AS(kjit::RuntimeConfig::from_environment(), doctest::Contains("KJIT_LOCK_STALE_AFTER"),
                         kjit::UsageError);
    unsetenv("KJIT_LOCK_TIMEOUT");
    unsetenv("KJIT_LOCK_STALE_AFTER");
  }

  TEST_CASE("configuration from the environment and its errors") {
    kjit::test::TempDir dir;
    setenv("KJIT_CACHE_DIR", (dir.path() / "envcache").c_str(), 1);
    setenv("KJIT_CACHE_MAX_SIZE", "512M", 1);
    setenv("KJIT_ALWAYS_COMPILE", "1", 1);
    setenv("KJIT_LOG", "debug", 1);
    auto c = kjit::RuntimeConfig::from_environment();
    CHECK(c.cache_dir.empty());  // KJIT_CACHE_DIR is read when the Runtime is made
    CHECK(kjit::Runtime(c).cache_dir() == dir.path() / "envcache");
    CHECK(c.cache_max_size == 512ull << 20);
    CHECK(c.always_compile);
    CHECK_FALSE(c.cache_disabled);
    CHECK(c.log_level == kjit::LogLevel::debug);
    setenv("KJIT_CACHE_MAX_SIZE", "lots", 1);
    CHECK_THROWS_WITH_AS(kjit::RuntimeConfig::from_environment(), doctest::Contains("KJIT_CACHE_MAX_SIZE"),
                         kjit::UsageError);
    unsetenv("KJIT_CACHE_MAX_SIZE");
    setenv("KJIT_LOG", "loud", 1);
    CHECK_THROWS_AS(kjit::RuntimeConfig::from_environment(), kjit::UsageError);
    unsetenv("KJIT_LOG");
    unsetenv("KJIT_ALWAYS_COMPILE");
    setenv("KJIT_CACHE_DISABLE", "1", 1);
    CHECK(kjit::RuntimeConfig::from_environment().cache_disabled);
    unsetenv("KJIT_CACHE_DISABLE");
    kjit::Runtime rt;  // from the environment
    CHECK(rt.cache_dir() == dir.path() / "envcache");
    unsetenv("KJIT_CACHE_DIR");
  }

  // #30, smaller finding: KJIT_CACHE_DISABLE=OFF and =False counted as on; KJIT_CACHE_SHARED=maybe was accepted.
  TEST_CASE("every flag reads on and off in any spelling and refuses anything else naming it") {
    for (const char* name : {"KJIT_CACHE_DISABLE", "KJIT_ALWAYS_COMPILE", "KJIT_CACHE_SHARED", "KJIT_REMOTE_READONLY"}) {
      INFO(name);
      auto flag = [&] {
        const auto c = kjit::RuntimeConfig::from_environment();
        const std::string n = name;
        return n == "KJIT_CACHE_DISABLE"    ? c.cache_disabled
               : n == "KJIT_ALWAYS_COMPILE" ? c.always_compile
               : n == "KJIT_CACHE_SHARED"   ? c.cache_shared
                                            : c.remote_read_only;
      };
      for (const char* off : {"OFF", "False", "no", "0", ""}) {
        setenv(name, off, 1);
        CHECK_FALSE(flag());
      }
      for (const char* on : {"ON", "True", "yes", "1"}) {
        setenv(name, on, 1);
        CHECK(flag());
      }
      setenv(name, "maybe", 1);
      const std::string expected = std::string(name) + "=\"maybe\"";
      CHECK_THROWS_WITH_AS(kjit::RuntimeConfig::from_environment(), doctest::Contains(expected.c_str()),
                           kjit::UsageError);
      unsetenv(name);
    }
  }
}
