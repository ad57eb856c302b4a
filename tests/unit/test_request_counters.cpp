// request::Counters: a Runtime's one counter list (KJIT_CACHE_COUNTERS plus registry_hits), each
// event counted once by its one owner, with no corrections: RuntimeStats and `kjit cache stats`
// (the store's flush into the folder) read the same table.
#include <kjit/tools.hpp>

#include "core/request/counters.hpp"
#include "support/helpers.hpp"
#include "support/redis_server.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <string>

namespace {

std::string source(int n) {
  return "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] *= " + std::to_string(n) + ".0f; }\n";
}

const kjit::CompileOptions k_sm90{.arch = kjit::Arch::sm(90)};

}  // namespace

TEST_SUITE("Runtime counters") {
  TEST_CASE("RuntimeStats has one field a counter and each is copied from the one list") {
    kjit::request::Counters c;
    std::uint64_t n = 0;
    c.registry_hits = ++n;
#define KJIT_TEST_SET(name) c.cache.name = ++n;
    KJIT_CACHE_COUNTERS(KJIT_TEST_SET)
#undef KJIT_TEST_SET
    const kjit::RuntimeStats s = c.snapshot();
    // Every field distinct and set: none left at 0, none copied twice.
    std::uint64_t fields[sizeof(kjit::RuntimeStats) / sizeof(std::uint64_t)];
    std::memcpy(fields, &s, sizeof(s));
    std::uint64_t sum = 0;
    for (std::uint64_t f : fields) sum += f;
    CHECK(sum == n * (n + 1) / 2);
    CHECK(s.registry_hits == 1);
    CHECK(s.disk_hits == 2);  // the list's first: hits
    CHECK(s.remote_shard_down == n);  // the list's last
  }

  TEST_CASE("a miss that compiles counts one miss and one compile and a disk hit one hit in both views") {
    kjit::test::TempDir dir;
    const auto config = kjit::test::quiet_config(dir / "cache");
    const kjit::Program p("counted.cu", source(3));
    {
      kjit::Runtime rt(config);
      CHECK(rt.compile(p, k_sm90).outcome == kjit::Outcome::compiled);
      const kjit::RuntimeStats s = rt.stats();
      CHECK(s.misses == 1);
      CHECK(s.compiles == 1);
      CHECK(s.disk_hits == 0);
      CHECK(s.waits == 0);
      CHECK(s.bytes_written > 0);
      CHECK(s.store_failures == 0);
    }
    {
      kjit::Runtime rt(config);
      CHECK(rt.compile(p, k_sm90).outcome == kjit::Outcome::hit);
      CHECK(rt.compile(p, k_sm90).outcome == kjit::Outcome::hit);
      const kjit::RuntimeStats s = rt.stats();
      CHECK(s.disk_hits == 2);
      CHECK(s.misses == 0);
      CHECK(s.compiles == 0);
      CHECK(s.waits == 0);
      CHECK(s.bytes_read > 0);
    }
    // The folder's totals (flushed by each Runtime) are the same events, counted once.
    const kjit::CacheStats total = kjit::Cache(dir / "cache").stats();
    CHECK(total.hits == 2);
    CHECK(total.misses == 1);
    CHECK(total.compiles == 1);
    CHECK(total.waits == 0);
  }

  TEST_CASE("always-compile and a disabled cache count a miss and a compile a request") {
    kjit::test::TempDir dir;
    for (bool disabled : {false, true}) {
      INFO(disabled);
      auto config = kjit::test::quiet_config(dir / "cache");
      config.always_compile = !disabled;
      config.cache_disabled = disabled;
      kjit::Runtime rt(config);
      const kjit::Program p("again.cu", source(5));
      CHECK(rt.compile(p, k_sm90).outcome == kjit::Outcome::compiled);
      CHECK(rt.compile(p, k_sm90).outcome == kjit::Outcome::compiled);
      const kjit::RuntimeStats s = rt.stats();
      CHECK(s.misses == 2);
      CHECK(s.compiles == 2);
      CHECK(s.disk_hits == 0);
      CHECK(s.store_failures == 0);
    }
  }

  TEST_CASE("a remote hit counts a remote hit and no disk miss or compile") {
    kjit::test::TempDir dir;
    kjit::test::RedisServer redis(dir / "redis");
    const kjit::Program p("remote.cu", source(7));
    {
      auto c = kjit::test::quiet_config(dir / "a");
      c.remote_cache = redis.url();
      kjit::Runtime rt(c);
      CHECK(rt.compile(p, k_sm90).outcome == kjit::Outcome::compiled);
      const kjit::RuntimeStats s = rt.stats();
      CHECK(s.misses == 1);
      CHECK(s.compiles == 1);
      CHECK(s.remote_misses == 1);
    }  // the destructor sends what is queued
    auto c = kjit::test::quiet_config(dir / "b");
    c.remote_cache = redis.url();
    {
      kjit::Runtime rt(c);
      CHECK(rt.compile(p, k_sm90).outcome == kjit::Outcome::remote_hit);
      const kjit::RuntimeStats s = rt.stats();
      CHECK(s.remote_hits == 1);
      CHECK(s.remote_requests == 1);
      CHECK(s.disk_hits == 0);
      CHECK(s.misses == 0);
      CHECK(s.compiles == 0);
      CHECK(s.waits == 0);
    }  // the worker writes the backfill to this node's disk by the Runtime's end
    const kjit::CacheStats b = kjit::Cache(dir / "b").stats();
    CHECK(b.bytes_written > 0);
    CHECK(b.remote_hits == 1);
    CHECK(b.misses == 0);
    CHECK(b.hits == 0);
    CHECK(b.compiles == 0);
  }
}
