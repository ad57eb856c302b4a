// request::CompileService and its one background worker: a remote hit returns at once and its
// backfill lands on the disk once the worker ran (the next fresh Runtime hits the disk, with no
// remote at all); a compile's usage is counted by the worker; the counters are in the cache's
// persistent stats once the Runtime is gone, hits included (which queue no flush of their own).
#include <kjit/tools.hpp>

#include "core/cache/store.hpp"
#include "core/request/compile_service.hpp"
#include "support/helpers.hpp"
#include "support/redis_server.hpp"
#include "support/temp_dir.hpp"
#include "support/store_parts.hpp"

#include <doctest/doctest.h>

#include <string>
#include <sys/stat.h>

namespace {

std::string source(int i) {
  return "extern \"C\" __global__ void b" + std::to_string(i) +
         "(float* x, int n) {\n  int j = blockIdx.x * blockDim.x + threadIdx.x;\n  if (j < n) x[j] = x[j] * " +
         std::to_string(i + 3) + ".0f + 1.0f;\n}\n";
}

const kjit::CompileOptions k_sm90{.arch = kjit::Arch::sm(90)};

}  // namespace

TEST_SUITE("CompileService") {
  TEST_CASE("a remote hit's backfill lands on the disk once the worker ran and a fresh Runtime hits it") {
    kjit::test::TempDir dir;
    kjit::test::RedisServer redis(dir / "redis");
    const kjit::Program p("backfill.cu", source(1));
    {
      auto c = kjit::test::quiet_config(dir / "a");
      c.remote_cache = redis.url();
      kjit::Runtime rt(c);
      CHECK(rt.compile(p, k_sm90).outcome == kjit::Outcome::compiled);
    }  // the destructor finishes the worker: the remote write is sent
    REQUIRE(redis.keys("kjit:*").size() == 1);

    auto c = kjit::test::quiet_config(dir / "b");
    c.remote_cache = redis.url();
    kjit::request::Counters counters;
    std::string key;
    {
      kjit::request::CompileService service(c, counters, [](kjit::LogLevel, std::string_view) {});
      // b's folder is made by the backfill, on the worker: not before the hit (#42 item 6).
      CHECK_FALSE(std::filesystem::exists(dir / "b"));
      const kjit::CompileResult r = service.obtain(p, kjit::compile::normalize(k_sm90), kjit::Arch::sm(90));
      CHECK(r.outcome == kjit::Outcome::remote_hit);
      CHECK(r.has_cubin());
      key = r.key;
      service.drain();  // the worker ran: the entry is on b's disk
      const auto parsed = kjit::cache::Key::from_hex(key);
      REQUIRE(parsed);
      kjit::cache::Store disk({(dir / "b").string()});  // another look at b's folder
      CHECK(disk.get_in_place(*parsed).outcome == kjit::cache::GetResult::Outcome::hit);
      CHECK(kjit::test::maintenance_of(disk).usage().entries == 1);  // and counted
      struct stat st{};
      REQUIRE(::stat((dir / "b").c_str(), &st) == 0);
      CHECK((st.st_mode & 07777) == 0700);
    }
    redis.kill();  // no remote at all now: only b's disk can answer
    auto local = kjit::test::quiet_config(dir / "b");
    kjit::Runtime fresh(local);
    const kjit::CompileResult again = fresh.compile(p, k_sm90);
    CHECK(again.outcome == kjit::Outcome::hit);
    CHECK(again.key == key);
  }

  TEST_CASE("a compile's entry is on the disk when it returns and the worker counts its usage") {
    kjit::test::TempDir dir;
    auto c = kjit::test::quiet_config(dir / "cache");
    kjit::request::Counters counters;
    kjit::request::CompileService service(c, counters, [](kjit::LogLevel, std::string_view) {});
    const kjit::CompileResult r = service.obtain(kjit::Program("own.cu", source(2)), kjit::compile::normalize(k_sm90), kjit::Arch::sm(90));
    REQUIRE(r.outcome == kjit::Outcome::compiled);
    const auto key = kjit::cache::Key::from_hex(r.key);
    REQUIRE(key);
    // The one thing the request path does itself: the next process needs this entry. The usage
    // file is the worker's: not written before it ran.
    kjit::cache::Store disk({(dir / "cache").string()});
    CHECK(disk.get_in_place(*key).outcome == kjit::cache::GetResult::Outcome::hit);
    service.drain();
    CHECK(std::filesystem::exists(dir / "cache" / "usage"));
    const kjit::cache::Usage usage = kjit::test::maintenance_of(disk).usage();
    CHECK(usage.entries == 1);
    CHECK(usage.bytes > r.cubin.size());
  }

  TEST_CASE("the counters are flushed at Runtime destruction hits included") {
    kjit::test::TempDir dir;
    const kjit::Program p("flushed.cu", source(3));
    {
      kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
      CHECK(rt.compile(p, k_sm90).outcome == kjit::Outcome::compiled);
    }
    {
      kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
      for (int i = 0; i < 3; ++i) CHECK(rt.compile(p, k_sm90).outcome == kjit::Outcome::hit);
    }  // hits queue no flush: the destruction writes them
    kjit::cache::Store store({(dir / "cache").string()});
    const kjit::cache::StatsSnapshot s = kjit::test::stats_of(store).read();
    CHECK(s.compiles == 1);
    CHECK(s.hits == 3);
    CHECK(s.misses == 1);
  }
}
