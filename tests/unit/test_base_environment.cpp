// base::k_environment: the one table of KJIT_* variables. README's configuration table lists
// exactly its rows with the same defaults; its defaults are RuntimeConfig's; each reader parses
// as its row says and names the variable when it refuses a value; no KJIT_* variable is read
// anywhere else in the library.
#include "support/scoped_env.hpp"
#include <kjit/error.hpp>
#include <kjit/runtime_config.hpp>

#include "cache/config.hpp"
#include "runtime/base/environment.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
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
    auto size = [](Env id) { return kjit::cache::parse_size(kjit::base::env_variable(id).default_text); };
    auto seconds = [](Env id) { return kjit::cache::parse_duration(kjit::base::env_variable(id).default_text); };
    CHECK(size(Env::cache_max_size) == c.cache_max_size);
    CHECK(size(Env::remote_max_value) == c.remote_max_value_size);
    CHECK(size(Env::max_source_size) == std::uint64_t{64} << 20);
    REQUIRE(seconds(Env::lock_timeout));
    CHECK(std::chrono::milliseconds(*seconds(Env::lock_timeout)) == c.lock_timeout);
    REQUIRE(seconds(Env::lock_stale_after));
    CHECK(std::chrono::milliseconds(*seconds(Env::lock_stale_after)) == c.lock_stale_after);
    CHECK(kjit::cache::parse_duration_ms(kjit::base::env_variable(Env::remote_timeout).default_text) ==
          c.remote_timeout);
    CHECK(c.remote_ttl.count() == 0);  // "never"
    CHECK(kjit::parse_log_level(kjit::base::env_variable(Env::log).default_text) == c.log_level);
    for (const auto& row : k_environment) {
      if (row.parser == EnvParser::flag) {
        INFO(row.name);
        CHECK(row.default_text == "off");
      }
    }
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
    for (const char* folder : {"runtime", "cache", "cli"}) {
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
}
