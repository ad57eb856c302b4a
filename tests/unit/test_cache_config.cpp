#include "support/scoped_env.hpp"
#include "core/system/units.hpp"
#include "core/cache/config.hpp"

#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <cstdlib>

using namespace kjit::cache;
using namespace kjit::system;

namespace {

using kjit::test::ScopedEnv;

}  // namespace

TEST_SUITE("config") {
  TEST_CASE("parse_size") {
    CHECK(parse_size("0") == 0u);
    CHECK(parse_size("1048576") == 1048576u);
    CHECK(parse_size("100k") == 102400u);
    CHECK(parse_size("100K") == 102400u);
    CHECK(parse_size("100KB") == 102400u);
    CHECK(parse_size("512M") == 512ull << 20);
    CHECK(parse_size("512MiB") == 512ull << 20);
    CHECK(parse_size("2G") == 2ull << 30);
    CHECK(parse_size("2g") == 2ull << 30);
    CHECK(parse_size("1.5GiB") == 3ull << 29);
    CHECK(parse_size("1.5 GiB") == 3ull << 29);
    CHECK(parse_size(" 3T ") == 3ull << 40);
    CHECK(parse_size("10B") == 10u);
    CHECK(parse_size(".5k") == 512u);
    CHECK_FALSE(parse_size(""));
    CHECK_FALSE(parse_size("G"));
    CHECK_FALSE(parse_size("-1"));
    CHECK_FALSE(parse_size("1X"));
    CHECK_FALSE(parse_size("1GG"));
    CHECK_FALSE(parse_size("1.2.3"));
    CHECK_FALSE(parse_size("99999999E"));  // over 2^64
  }

  TEST_CASE("parse_duration") {
    using std::chrono::seconds;
    CHECK(parse_duration("45") == seconds(45));
    CHECK(parse_duration("30s") == seconds(30));
    CHECK(parse_duration("10m") == seconds(600));
    CHECK(parse_duration("2h") == seconds(7200));
    CHECK(parse_duration("7d") == seconds(7 * 86400));
    CHECK(parse_duration("2w") == seconds(14 * 86400));
    CHECK(parse_duration("1.5h") == seconds(5400));
    CHECK(parse_duration("7D") == seconds(7 * 86400));
    CHECK_FALSE(parse_duration(""));
    CHECK_FALSE(parse_duration("d"));
    CHECK_FALSE(parse_duration("-5s"));
    CHECK_FALSE(parse_duration("5y"));
  }

  TEST_CASE("default_cache_dir: the chosen folder (KJIT_CACHE_DIR) then XDG_CACHE_HOME then HOME") {
    ScopedEnv home("HOME", "/home/u");
    {
      ScopedEnv b("XDG_CACHE_HOME", "/xdg");
      CHECK(default_cache_dir("/explicit") == "/explicit");
    }
    {
      ScopedEnv b("XDG_CACHE_HOME", "/xdg");
      CHECK(default_cache_dir("") == "/xdg/kjit");
    }
    {
      ScopedEnv b("XDG_CACHE_HOME", "relative/ignored");
      CHECK(default_cache_dir("") == "/home/u/.cache/kjit");
    }
    {
      ScopedEnv b("XDG_CACHE_HOME", nullptr);
      CHECK(default_cache_dir("") == "/home/u/.cache/kjit");
    }
  }

  TEST_CASE("write_cachedir_tag writes the standard signature once") {
    kjit::test::TempDir tmp;
    const auto written = write_cachedir_tag(tmp.path());
    REQUIRE_MESSAGE(written, (written ? std::string() : written.error().message));
    const std::string content = kjit::test::read_file(tmp / "CACHEDIR.TAG");
    CHECK(content.starts_with("Signature: 8a477f597d28d172789f06886806bc55"));
    kjit::test::write_file(tmp / "CACHEDIR.TAG", content + "# user edit\n");
    REQUIRE(write_cachedir_tag(tmp.path()));
    CHECK(kjit::test::read_file(tmp / "CACHEDIR.TAG").ends_with("# user edit\n"));  // not rewritten
    const auto missing = write_cachedir_tag(tmp / "missing");
    REQUIRE_FALSE(missing);
    CHECK_FALSE(missing.error().message.empty());
  }

  // #30, smaller finding: KJIT_CACHE_DISABLE=OFF counted as on and KJIT_CACHE_SHARED=maybe was accepted.
  TEST_CASE("parse_flag: 1 0 true false yes no on off in any case, anything else is nothing") {
    for (const char* on : {"1", "true", "TRUE", "True", "yes", "Yes", "on", "ON", " on "}) {
      INFO(on);
      CHECK(parse_flag(on) == std::optional<bool>(true));
    }
    for (const char* off : {"", "0", "false", "False", "FALSE", "no", "NO", "off", "OFF", "Off"}) {
      INFO(off);
      CHECK(parse_flag(off) == std::optional<bool>(false));
    }
    for (const char* bad : {"maybe", "2", "enable", "y", "n", "-1", "truee"}) {
      INFO(bad);
      CHECK_FALSE(parse_flag(bad).has_value());
    }
  }
}
