// base::k_environment: the one table of KJIT_* variables. README's configuration table lists
// exactly its rows with the same defaults; its defaults are RuntimeConfig's; each reader parses
// as its row says and names the variable when it refuses a value; no KJIT_* variable is read
// anywhere else in the library.
#include "support/scoped_env.hpp"
#include <kjit/error.hpp>
#include <kjit/runtime_config.hpp>

#include "core/system/units.hpp"
#include "core/cache/config.hpp"
#include "core/system/file_lock.hpp"
#include "core/base/environment.hpp"
#include "core/base/source_file.hpp"
#include "support/helpers.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <thread>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace {

using kjit::base::Env;
using kjit::base::EnvParser;
using kjit::base::k_environment;

using kjit::test::ScopedEnv;

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string trim(std::string s) {
  while (!s.empty() && (s.front() == ' ')) s.erase(s.begin());
  while (!s.empty() && (s.back() == ' ')) s.pop_back();
  return s;
}

std::string without_backticks(std::string s) {
  std::erase(s, '`');
  return s;
}

// README's "## Configuration" table: variable -> default, backticks removed.
std::map<std::string, std::string> readme_configuration(const std::string& readme) {
  std::map<std::string, std::string> rows;
  const auto start = readme.find("\n## Configuration\n");
  REQUIRE(start != std::string::npos);
  const auto end = readme.find("\n## ", start + 1);
  std::istringstream lines(readme.substr(start, end - start));
  std::string line;
  bool header_seen = false;
  while (std::getline(lines, line)) {
    if (line.rfind("| variable | default |", 0) == 0) {
      header_seen = true;
      continue;
    }
    if (!header_seen || line.rfind("| `", 0) != 0) continue;
    // | `NAME` | default | meaning |
    const auto second = line.find('|', 1);
    const auto third = line.find('|', second + 1);
    REQUIRE(third != std::string::npos);
    const std::string name = without_backticks(trim(line.substr(1, second - 1)));
    CHECK_MESSAGE(rows.count(name) == 0, name << " is listed twice");
    rows[name] = without_backticks(trim(line.substr(second + 1, third - second - 1)));
  }
  CHECK(header_seen);
  return rows;
}

}  // namespace

TEST_SUITE("environment") {
  TEST_CASE("the table: one row a variable in the order of Env and every name KJIT_") {
    std::set<std::string_view> names;
    for (std::size_t i = 0; i < k_environment.size(); ++i) {
      const auto& row = k_environment[i];
      INFO(row.name);
      CHECK(static_cast<std::size_t>(row.id) == i);
      CHECK(row.name.starts_with("KJIT_"));
      CHECK_FALSE(row.default_text.empty());
      CHECK_FALSE(row.doc.empty());
      CHECK(names.insert(row.name).second);
    }
  }

  TEST_CASE("README's configuration table lists exactly the table's variables with the same defaults") {
    const auto rows = readme_configuration(read_all(std::filesystem::path(KJIT_SOURCE_DIR) / "README.md"));
    for (const auto& row : k_environment) {
      INFO(row.name);
      const auto it = rows.find(std::string(row.name));
      REQUIRE_MESSAGE(it != rows.end(), row.name << " is not in README's configuration table");
      CHECK(it->second == row.default_text);
    }
    for (const auto& [name, value] : rows) {
      bool known = false;
      for (const auto& row : k_environment) known = known || row.name == name;
      CHECK_MESSAGE(known, name << " is in README but not in base::k_environment");
    }
    CHECK(rows.size() == k_environment.size());
  }

  TEST_CASE("the table's defaults are RuntimeConfig's and the source cap's") {
    const kjit::RuntimeConfig c;
    auto size = [](Env id) { return kjit::system::parse_size(kjit::base::env_variable(id).default_text); };
    auto seconds = [](Env id) { return kjit::system::parse_duration(kjit::base::env_variable(id).default_text); };
    CHECK(size(Env::cache_max_size) == c.cache_max_size);
    CHECK(size(Env::remote_max_value) == c.remote_max_value_size);
    CHECK(size(Env::max_source_size) == std::uint64_t{64} << 20);
    REQUIRE(seconds(Env::lock_timeout));
    CHECK(std::chrono::milliseconds(*seconds(Env::lock_timeout)) == c.lock_timeout);
    REQUIRE(seconds(Env::lock_stale_after));
    CHECK(std::chrono::milliseconds(*seconds(Env::lock_stale_after)) == c.lock_stale_after);
    CHECK(kjit::system::parse_duration_ms(kjit::base::env_variable(Env::remote_timeout).default_text) ==
          c.remote_timeout);
    CHECK(c.remote_ttl.count() == 0);  // "never"
    CHECK(kjit::parse_log_level(kjit::base::env_variable(Env::log).default_text) == c.log_level);
    for (const auto& row : k_environment) {
      if (row.parser == EnvParser::flag) {
        INFO(row.name);
        CHECK((row.default_text == "off" || row.default_text == "on"));
      }
    }
    CHECK((kjit::base::env_variable(Env::nvrtc_fast).default_text == "on") == c.nvrtc_fast);
  }

  TEST_CASE("from_environment reads through the table and names a refused variable") {
    {
      ScopedEnv a("KJIT_CACHE_MAX_SIZE", "512M");
      ScopedEnv b("KJIT_REMOTE_TIMEOUT", "0.2s");
      ScopedEnv c("KJIT_LOCK_STALE_AFTER", "1m");
      ScopedEnv d("KJIT_CACHE_DISABLE", "yes");
      ScopedEnv e("KJIT_LOG", "debug");
      ScopedEnv f("KJIT_REMOTE_CACHE", "");  // empty: unset
      const auto config = kjit::RuntimeConfig::from_environment();
      CHECK(config.cache_max_size == 512ull << 20);
      CHECK(config.remote_timeout == std::chrono::milliseconds(200));
      CHECK(config.lock_stale_after == std::chrono::minutes(1));
      CHECK(config.cache_disabled);
      CHECK(config.log_level == kjit::LogLevel::debug);
      CHECK(config.remote_cache.empty());
    }
    for (auto [name, value] : {std::pair{"KJIT_CACHE_MAX_SIZE", "lots"}, std::pair{"KJIT_REMOTE_TIMEOUT", "0ms"},
                               std::pair{"KJIT_REMOTE_TTL", "soon"}, std::pair{"KJIT_CACHE_SHARED", "maybe"},
                               std::pair{"KJIT_LOG", "loud"}}) {
      INFO(name);
      ScopedEnv bad(name, value);
      const std::string expected = std::string(name) + "=\"" + value + "\"";
      CHECK_THROWS_WITH_AS(kjit::RuntimeConfig::from_environment(), doctest::Contains(expected.c_str()),
                           kjit::UsageError);
    }
  }

  TEST_CASE("the other readers: a path list skips empty parts and KJIT_TUNE takes force") {
    {
      ScopedEnv a("KJIT_KERNEL_PATH", "/a::/b:");
      CHECK(kjit::base::env_path_list(Env::kernel_path) == std::vector<std::string>{"/a", "/b"});
    }
    {
      ScopedEnv a("KJIT_TUNE", nullptr);
      CHECK(kjit::base::env_flag_or_force(Env::tune) == kjit::base::FlagOrForce::on);
    }
    {
      ScopedEnv a("KJIT_TUNE", "FORCE");
      CHECK(kjit::base::env_flag_or_force(Env::tune) == kjit::base::FlagOrForce::force);
    }
    {
      ScopedEnv a("KJIT_TUNE", "off");
      CHECK(kjit::base::env_flag_or_force(Env::tune) == kjit::base::FlagOrForce::off);
    }
    {
      ScopedEnv a("KJIT_TUNE", "sometimes");
      CHECK_THROWS_AS(kjit::base::env_flag_or_force(Env::tune), kjit::UsageError);
    }
    {
      ScopedEnv a("KJIT_CACHE_DIR", "/chosen");
      CHECK(kjit::base::cache_dir_from_environment() == "/chosen");
    }
    // A reader of another kind than the row's is kjit's own mistake, refused.
    CHECK_THROWS_AS(kjit::base::env_size(Env::cache_shared), kjit::Error);
  }

  TEST_CASE("no KJIT_ variable is read outside base's table in the library") {
    namespace fs = std::filesystem;
    const fs::path root = KJIT_SOURCE_DIR;
    int files = 0;
    for (const char* folder : {"core", "tools", "cli"}) {
      for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
        const auto ext = entry.path().extension();
        if (ext != ".cpp" && ext != ".hpp") continue;
        ++files;
        if (entry.path().filename() == "environment.cpp") continue;
        const std::string text = read_all(entry.path());
        INFO(entry.path().string());
        // getenv("KJIT_...") or a helper env("KJIT_..."); setenv (profile_program's channel) is fine.
        CHECK_FALSE(std::regex_search(text, std::regex(R"((^|[^a-z_])(get)?env\("KJIT_)")));
      }
    }
    CHECK(files > 20);
  }

  // #40 item 21: KJIT_LOCK_STALE_AFTER=200000d made a waiter give up at once ("no progress for
  // 0.0 s"), and KJIT_LOCK_TIMEOUT=1000000000000d "after 0 ms": the durations overflowed.
  TEST_CASE("every duration's edges: refused below its least, saturated at 100 years, never overflowed") {
    using namespace std::chrono_literals;
    const std::chrono::milliseconds forever = kjit::system::k_max_duration;
    CHECK(kjit::system::parse_duration("36525d") == kjit::system::k_max_duration);
    CHECK(kjit::system::parse_duration("36524d") == std::chrono::seconds(36524ll * 86400));
    CHECK(kjit::system::parse_duration_ms("200000d") == forever);
    CHECK(kjit::system::parse_duration(std::string(400, '9') + "w") == kjit::system::k_max_duration);
    CHECK(kjit::system::saturate_duration(std::chrono::milliseconds::max()) == forever);
    CHECK(kjit::system::saturate_duration(-5ms) == 0ms);
    struct Edge {
      const char* value;
      std::optional<std::chrono::milliseconds> expected;  // nullopt: refused, naming the variable
    };
    const std::map<std::string, std::vector<Edge>> edges = {
        {"KJIT_LOCK_TIMEOUT", {{"0s", 0ms}, {"1s", 1s}, {"200000d", forever}, {"1000000000000d", forever}, {"-1s", {}}}},
        {"KJIT_LOCK_STALE_AFTER",
         {{"0s", {}}, {"1s", {}}, {"2s", 2s}, {"200000d", forever}, {"1000000000000d", forever}, {"x", {}}}},
        {"KJIT_REMOTE_TIMEOUT", {{"0ms", {}}, {"1ms", 1ms}, {"0.5ms", {}}, {"200000d", forever}, {"9e9", {}}}},
        {"KJIT_REMOTE_TTL", {{"0s", 0ms}, {"1s", 1s}, {"200000d", forever}, {"1000000000000d", forever}}},
    };
    std::set<std::string> covered;
    for (const auto& [name, cases] : edges) {
      covered.insert(name);
      for (const Edge& e : cases) {
        INFO(name << "=" << std::string(e.value));
        ScopedEnv env(name.c_str(), e.value);
        if (!e.expected) {
          CHECK_THROWS_WITH_AS(kjit::RuntimeConfig::from_environment(), doctest::Contains(name.c_str()),
                               kjit::UsageError);
          continue;
        }
        const auto c = kjit::RuntimeConfig::from_environment();
        const std::chrono::milliseconds got = name == "KJIT_LOCK_TIMEOUT"       ? c.lock_timeout
                                              : name == "KJIT_LOCK_STALE_AFTER" ? c.lock_stale_after
                                              : name == "KJIT_REMOTE_TIMEOUT"   ? c.remote_timeout
                                                                                : std::chrono::milliseconds(c.remote_ttl);
        CHECK(got == *e.expected);
      }
    }
    for (const auto& row : k_environment) {  // a duration row added later gets its edges here too
      if (row.parser == EnvParser::duration || row.parser == EnvParser::positive_duration_ms) {
        CHECK_MESSAGE(covered.count(std::string(row.name)) == 1, row.name << " has no edge cases");
      }
    }

    // The saturated values in use: a waiter with both waits for a held lock, then takes it.
    ScopedEnv timeout("KJIT_LOCK_TIMEOUT", "1000000000000d");
    ScopedEnv stale("KJIT_LOCK_STALE_AFTER", "200000d");
    const auto c = kjit::RuntimeConfig::from_environment();
    kjit::test::TempDir dir;
    const auto path = dir / "k.lock";
    auto holder = std::make_unique<kjit::system::Result<kjit::system::FileLock>>(kjit::system::FileLock::try_acquire(path));
    REQUIRE(*holder);
    std::thread release([&] {
      std::this_thread::sleep_for(300ms);
      holder.reset();
    });
    const auto start = std::chrono::steady_clock::now();
    auto waiter = kjit::system::FileLock::acquire(path, c.lock_timeout, {}, 1s,
                                                 kjit::system::FileLock::OnRelease::keep_file, c.lock_stale_after);
    const auto waited = std::chrono::steady_clock::now() - start;
    release.join();
    CHECK_MESSAGE(waiter, (waiter ? "" : waiter.error().message));
    CHECK(waited >= 250ms);
  }

  // #40 item 22: KJIT_MAX_SOURCE_SIZE=0, =1 and =99999999999999999999 were taken, and every
  // compile then failed with kind io.
  TEST_CASE("every size's edges: a value kjit cannot use is a usage error at start-up naming the variable") {
    struct Edge {
      const char* value;
      std::optional<std::uint64_t> expected;  // nullopt: refused
    };
    const std::map<std::string, std::vector<Edge>> edges = {
        {"KJIT_MAX_SOURCE_SIZE",
         {{"0", {}}, {"1", {}}, {"1023", {}}, {"1K", 1024}, {"4G", 4ull << 30}, {"4294967297", {}},
          {"99999999999999999999", {}}, {"-1", {}}}},
        {"KJIT_REMOTE_MAX_VALUE", {{"0", {}}, {"1", {}}, {"1K", 1024}, {"4G", 4ull << 30}, {"5G", {}}, {"16E", {}}}},
        {"KJIT_CACHE_MAX_SIZE",
         {{"0", 0}, {"1", 1}, {"18446744073709551615", UINT64_MAX}, {"16E", {}}, {"99999999999999999999", {}}}},
    };
    std::set<std::string> covered;
    for (const auto& [name, cases] : edges) {
      covered.insert(name);
      for (const Edge& e : cases) {
        INFO(name << "=" << std::string(e.value));
        ScopedEnv env(name.c_str(), e.value);
        if (!e.expected) {
          CHECK_THROWS_WITH_AS(kjit::RuntimeConfig::from_environment(), doctest::Contains(name.c_str()),
                               kjit::UsageError);
          continue;
        }
        const auto c = kjit::RuntimeConfig::from_environment();
        if (name == "KJIT_MAX_SOURCE_SIZE") CHECK(kjit::base::max_source_size() == *e.expected);
        if (name == "KJIT_REMOTE_MAX_VALUE") CHECK(c.remote_max_value_size == *e.expected);
        if (name == "KJIT_CACHE_MAX_SIZE") CHECK(c.cache_max_size == *e.expected);
      }
    }
    for (const auto& row : k_environment) {
      if (row.parser == EnvParser::size || row.parser == EnvParser::positive_size) {
        CHECK_MESSAGE(covered.count(std::string(row.name)) == 1, row.name << " has no edge cases");
      }
    }

    // The CLI: exit 2 before anything runs, naming the variable (text and --json), never kind io.
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "k.cu", "extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }\n");
    const std::string kjit = std::string(KJIT_BINARY_DIR) + "/cli/kjit --cache-dir " + (dir / "cache").string();
    const std::string compile = " compile --arch sm_90 " + (dir / "k.cu").string();
    for (const char* value : {"0", "1", "99999999999999999999"}) {
      INFO(value);
      const std::string env = std::string("KJIT_MAX_SOURCE_SIZE=") + value + " ";
      auto text = kjit::test::run_command(env + kjit + compile + " 2>&1");
      CHECK(text.code == 2);
      CHECK(text.out.find("KJIT_MAX_SOURCE_SIZE") != std::string::npos);
      auto json = kjit::test::run_command(env + kjit + " --json" + compile + " 2>/dev/null");
      CHECK(json.code == 2);
      CHECK(json.out.find("\"usage\"") != std::string::npos);
      CHECK(json.out.find("KJIT_MAX_SOURCE_SIZE") != std::string::npos);
    }
    CHECK(kjit::test::run_command("KJIT_MAX_SOURCE_SIZE=1K " + kjit + compile + " 2>&1").code == 0);
    CHECK(kjit::test::run_command("KJIT_REMOTE_MAX_VALUE=0 " + kjit + " cache stats 2>&1").code == 2);
    // --help still answers.
    CHECK(kjit::test::run_command("KJIT_MAX_SOURCE_SIZE=0 " + kjit + " --help >/dev/null 2>&1").code == 0);
  }
}

// RuntimeConfig::set and options(): the fields by name, read as their variables are, the one table
// the Python package's kjit.Runtime(**options) reads.
TEST_SUITE("runtime_options") {
  TEST_CASE("every field but the log callback is a row, named once, mirroring its variable") {
    std::set<std::string> names;
    for (const auto& o : kjit::RuntimeConfig::options()) {
      CHECK(names.insert(std::string(o.name)).second);
      CHECK(!o.doc.empty());
      if (!o.variable.empty()) {
        bool found = false;
        for (const auto& v : kjit::base::k_environment) found = found || v.name == o.variable;
        CHECK_MESSAGE(found, o.variable);
      }
    }
    CHECK(names.size() == 25);
    CHECK(names.count("log") == 0);
  }

  TEST_CASE("set reads each kind as its variable is read and names the option when it refuses") {
    using namespace std::chrono_literals;
    kjit::RuntimeConfig c;
    c.set("cache_max_size", "3G");
    CHECK(c.cache_max_size == 3ull << 30);
    c.set("lock_timeout", "90s");
    CHECK(c.lock_timeout == std::chrono::milliseconds(90s));
    c.set("remote_timeout", "75ms");
    CHECK(c.remote_timeout == 75ms);
    c.set("remote_ttl", "2d");
    CHECK(c.remote_ttl == std::chrono::seconds(48h));
    c.set("always_compile", "yes");
    CHECK(c.always_compile);
    c.set("always_compile", "0");
    CHECK(!c.always_compile);
    c.set("log_level", "debug");
    CHECK(c.log_level == kjit::LogLevel::debug);
    c.set("remote_max_value_size", "1M");
    CHECK(c.remote_max_value_size == 1ull << 20);
    c.set("wait_progress_every", "250ms");
    CHECK(c.wait_progress_every == 250ms);
    c.set("dump_hits", "on");
    CHECK(c.dump_hits);
    c.set("cache_required", "always");
    CHECK(c.cache_required == kjit::CacheRequired::always);

    auto refused = [&](const char* name, const char* value, const char* expected) {
      try {
        c.set(name, value);
        FAIL_CHECK(name << "=" << value << " was taken");
      } catch (const kjit::UsageError& e) {
        CHECK_MESSAGE(std::string(e.what()).find(name) != std::string::npos, std::string(e.what()));
        CHECK_MESSAGE(std::string(e.what()).find(expected) != std::string::npos, std::string(e.what()));
      }
    };
    refused("cache_max_size", "lots", "a size");
    refused("cache_max_size", "-1", "a size");
    refused("remote_max_value_size", "1", "1K to 4G");
    refused("lock_stale_after", "1s", "at least 2 s");
    refused("remote_timeout", "0", "positive");
    refused("always_compile", "maybe", "true");
    refused("log_level", "loud", "warn");
    refused("cache_required", "sometimes", "when_named");
    refused("cache_dirr", "/tmp", "unknown option");
    refused("log", "x", "callback");
  }

  TEST_CASE("naming a cache folder makes it required when named, as --cache-dir does, unless said after") {
    kjit::RuntimeConfig c;
    c.set("cache_dir", "/tmp/kjit-x");
    CHECK(c.cache_dir == "/tmp/kjit-x");
    CHECK(c.cache_required == kjit::CacheRequired::when_named);
    c.set("cache_required", "never");
    CHECK(c.cache_required == kjit::CacheRequired::never);
  }

  TEST_CASE("a NUL in a value is refused") {
    kjit::RuntimeConfig c;
    CHECK_THROWS_AS(c.set("dump_dir", std::string_view("/tmp/a\0b", 8)), kjit::UsageError);
  }

  TEST_CASE("KJIT_REMOTE_CACHE's list is checked at start naming the entry and KJIT_REQUIRE_HIT is read") {
    {
      ScopedEnv list("KJIT_REMOTE_CACHE", "redis://:s3cret@a,redis://b(2),unix:///run/r.sock");
      ScopedEnv hit("KJIT_REQUIRE_HIT", "yes");
      const kjit::RuntimeConfig c = kjit::RuntimeConfig::from_environment();
      CHECK(c.remote_cache == "redis://:s3cret@a,redis://b(2),unix:///run/r.sock");
      CHECK(c.require_hit);
    }
    for (const char* bad : {"redis://:s3cret@a,,redis://b", "redis://:s3cret@a(0)", "redis://:s3cret@a,nohost"}) {
      ScopedEnv list("KJIT_REMOTE_CACHE", bad);
      try {
        (void)kjit::RuntimeConfig::from_environment();
        FAIL("accepted ", bad);
      } catch (const kjit::UsageError& e) {
        const std::string m = e.what();
        CHECK_MESSAGE(m.find("KJIT_REMOTE_CACHE") != std::string::npos, m);
        CHECK_MESSAGE(m.find("redis://:***@a") != std::string::npos, m);
        CHECK_MESSAGE(m.find("s3cret") == std::string::npos, m);
      }
    }
    {
      ScopedEnv hit("KJIT_REQUIRE_HIT", "maybe");
      CHECK_THROWS_AS((void)kjit::RuntimeConfig::from_environment(), kjit::UsageError);
    }
    kjit::RuntimeConfig c;
    c.set("require_hit", "on");
    CHECK(c.require_hit);
    CHECK_THROWS_AS(c.set("remote_cache", "redis://a(x)"), kjit::UsageError);
    c.set("remote_cache", "redis://a,redis://b");
    CHECK(c.remote_cache == "redis://a,redis://b");
  }
}
