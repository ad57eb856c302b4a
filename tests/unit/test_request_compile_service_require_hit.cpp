// RuntimeConfig::require_hit (KJIT_REQUIRE_HIT): a request that misses every tier throws
// CacheMissError naming the program, the key and why each tier missed (disk absent or damaged,
// remote none, absent, rejected, shard down), and compiles nothing; seeded tiers give hits.
#include <kjit/kjit.hpp>
#include <kjit/tools.hpp>

#include "support/helpers.hpp"
#include "support/redis_server.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace {

std::string source(int i) {
  return "extern \"C\" __global__ void q" + std::to_string(i) + "(float* x) { x[threadIdx.x] *= " +
         std::to_string(i + 2) + ".5f; }\n";
}

const kjit::CompileOptions k_sm90{.arch = kjit::Arch::sm(90)};

// The CacheMissError a compile throws (fails the test when it throws nothing or another error).
kjit::CacheMissError miss_of(kjit::Runtime& rt, const kjit::Program& p) {
  try {
    rt.compile(p, k_sm90);
  } catch (const kjit::CacheMissError& e) {
    return e;
  }
  FAIL("no CacheMissError for ", p.name());
  throw;
}

std::string why(const kjit::CacheMissError& e, const std::string& tier) {
  for (const auto& t : e.tiers()) {
    if (t.name == tier) return t.why;
  }
  return "<not asked>";
}

}  // namespace

TEST_SUITE("CompileService") {
  TEST_CASE("require_hit: a miss everywhere throws CacheMissError naming each tier and compiles nothing") {
    kjit::test::TempDir dir;
    const kjit::Program p("needed.cu", source(1));
    auto c = kjit::test::quiet_config(dir / "cache");
    c.require_hit = true;
    kjit::Runtime rt(c);
    const kjit::CacheMissError e = miss_of(rt, p);
    CHECK(e.program() == "needed.cu");
    CHECK(e.key().size() == 32);
    REQUIRE(e.tiers().size() == 2);
    CHECK(why(e, "disk").find("absent") == 0);
    CHECK(why(e, "remote").find("none configured") == 0);
    const std::string message = e.what();
    for (const std::string& part : {std::string("needed.cu"), e.key(), std::string("KJIT_REQUIRE_HIT"),
                                    std::string("disk: absent"), std::string("remote: none configured")}) {
      CHECK_MESSAGE(message.find(part) != std::string::npos, message);
    }
    CHECK(rt.stats().compiles == 0);
    CHECK(kjit::Cache(dir / "cache").list().empty());

    // Seeded: the same request hits under require_hit.
    {
      kjit::Runtime seed(kjit::test::quiet_config(dir / "cache"));
      CHECK(seed.compile(p, k_sm90).outcome == kjit::Outcome::compiled);
    }
    kjit::Runtime again(c);
    CHECK(again.compile(p, k_sm90).outcome == kjit::Outcome::hit);
  }

  TEST_CASE("require_hit: a damaged entry and an absent rejected or down remote each say why") {
    kjit::test::TempDir dir;
    kjit::test::RedisServer redis(dir / "redis");
    const kjit::Program absent("absent.cu", source(2)), damaged("damaged.cu", source(3)), foreign("foreign.cu", source(4));
    std::string damaged_key;
    {
      auto seed = kjit::test::quiet_config(dir / "cache");
      kjit::Runtime rt(seed);
      damaged_key = rt.compile(damaged, k_sm90).key;
      auto fleet = kjit::test::quiet_config(dir / "fleet");
      fleet.remote_cache = redis.url();
      kjit::Runtime writer(fleet);
      CHECK(writer.compile(foreign, k_sm90).outcome == kjit::Outcome::compiled);
    }  // sent unsigned
    for (const auto& entry : kjit::Cache(dir / "cache").list()) {
      if (entry.key == damaged_key) {
        std::fstream f(entry.path, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(-3, std::ios::end);
        f.put('\x5a');
      }
    }
    std::filesystem::path secret = dir / "secret";
    std::ofstream(secret) << "a fleet secret of enough length\n";
    auto c = kjit::test::quiet_config(dir / "cache");
    c.require_hit = true;
    c.remote_cache = redis.url();
    c.remote_secret_file = secret;
    kjit::Runtime rt(c);
    const kjit::CacheMissError a = miss_of(rt, absent);
    CHECK(why(a, "remote").find("absent from " + redis.url()) == 0);
    const kjit::CacheMissError d = miss_of(rt, damaged);
    CHECK_MESSAGE(why(d, "disk").find("damaged") == 0, why(d, "disk"));
    const kjit::CacheMissError r = miss_of(rt, foreign);
    CHECK_MESSAGE(why(r, "remote").find("rejected") == 0, why(r, "remote"));
    CHECK_MESSAGE(why(r, "remote").find("signature") != std::string::npos, why(r, "remote"));
    redis.kill();
    const kjit::CacheMissError down1 = miss_of(rt, absent);
    CHECK_MESSAGE(why(down1, "remote").find("unreachable") == 0, why(down1, "remote"));
    miss_of(rt, absent);
    miss_of(rt, absent);  // 3 failures in a row: the shard is skipped
    const kjit::CacheMissError down = miss_of(rt, absent);
    CHECK_MESSAGE(why(down, "remote").find(redis.url() + " is down") == 0, why(down, "remote"));
    CHECK(rt.stats().compiles == 0);
    CHECK(rt.stats().remote_shard_down == 1);
  }

  TEST_CASE("require_hit with always_compile is a usage error") {
    kjit::test::TempDir dir;
    auto c = kjit::test::quiet_config(dir / "cache");
    c.require_hit = true;
    c.always_compile = true;
    CHECK_THROWS_AS(kjit::Runtime{c}, kjit::UsageError);
  }
}
