#include "core/cache/persistent_stats.hpp"

#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <thread>
#include <vector>

using namespace kjit::cache;
using namespace kjit::system;

TEST_SUITE("PersistentStats") {
  TEST_CASE("format and parse round-trip - unknown or broken lines are ignored") {
    StatsSnapshot s;
    s.hits = 1;
    s.misses = 2;
    s.compiles = 3;
    s.waits = 4;
    s.damaged = 5;
    s.evictions = 6;
    s.bytes_written = 7;
    s.bytes_read = 8;
    s.store_failures = 9;
    CHECK(PersistentStats::parse(PersistentStats::format(s)) == s);
    const StatsSnapshot p = PersistentStats::parse("hits 3\nfuture_counter 9\nmisses x\nwaits 12junk\ncompiles 4");
    CHECK(p.hits == 3);
    CHECK(p.misses == 0);
    CHECK(p.waits == 0);
    CHECK(p.compiles == 4);
  }

  TEST_CASE("the file format is one line per counter, by name, in a fixed order") {
    // A stats file written before the counters were listed once: it must still read the same.
    const std::string file = "hits 1\nmisses 2\ncompiles 3\nwaits 4\ndamaged 5\nevictions 6\n"
                             "bytes_written 7\nbytes_read 8\nstore_failures 9\n";
    const StatsSnapshot s = PersistentStats::parse(file);
    CHECK(s.hits == 1);
    CHECK(s.misses == 2);
    CHECK(s.compiles == 3);
    CHECK(s.waits == 4);
    CHECK(s.damaged == 5);
    CHECK(s.evictions == 6);
    CHECK(s.bytes_written == 7);
    CHECK(s.bytes_read == 8);
    CHECK(s.store_failures == 9);
    // Counters added later (the remote tier's) follow the old ones: old files keep their totals.
    CHECK(PersistentStats::format(s).rfind(file, 0) == 0);
  }

  TEST_CASE("add accumulates - a missing or garbled file reads as zero") {
    kjit::test::TempDir tmp;
    PersistentStats stats(tmp / "stats");
    CHECK(stats.read() == StatsSnapshot{});
    StatsSnapshot d;
    d.hits = 2;
    d.bytes_read = 100;
    REQUIRE(stats.add(d));
    REQUIRE(stats.add(d));
    CHECK(stats.read().hits == 4);
    CHECK(stats.read().bytes_read == 200);
    kjit::test::write_file(tmp / "stats", std::string("\0\1\2garbage", 10));
    CHECK(stats.read() == StatsSnapshot{});
    REQUIRE(stats.add(d));
    CHECK(stats.read().hits == 2);
    REQUIRE(stats.reset());
    CHECK(stats.read() == StatsSnapshot{});
  }

  TEST_CASE("concurrent adds lose nothing") {
    kjit::test::TempDir tmp;
    PersistentStats stats(tmp / "stats");
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        StatsSnapshot d;
        d.misses = 1;
        for (int i = 0; i < 50; ++i) stats.add(d);
      });
    }
    for (auto& t : threads) t.join();
    CHECK(stats.read().misses == 200);
  }

  TEST_CASE("a file that cannot be written gives false and a message") {
    kjit::test::TempDir tmp;
    const auto added = PersistentStats(tmp / "missing" / "stats").add(StatsSnapshot{});
    REQUIRE_FALSE(added);
    CHECK(added.error().message.find("missing") != std::string::npos);
  }
}

TEST_SUITE("Stats") {
  TEST_CASE("snapshot, += and saturating -=") {
    Stats s;
    s.hits += 3;
    s.misses += 1;
    StatsSnapshot a = s.snapshot();
    CHECK(a.hits == 3);
    StatsSnapshot b;
    b.hits = 5;
    b.misses = 1;
    a += b;
    CHECK(a.hits == 8);
    CHECK(a.misses == 2);
    a -= b;
    a -= b;
    CHECK(a.hits == 0);
    CHECK(a.misses == 0);
  }

  TEST_CASE("snapshot, += and -= cover every counter") {
    Stats s;
    std::uint64_t n = 0;
#define KJIT_TEST_SET(name) s.name = ++n;
    KJIT_CACHE_COUNTERS(KJIT_TEST_SET)
#undef KJIT_TEST_SET
    const StatsSnapshot snap = s.snapshot();
    n = 0;
#define KJIT_TEST_CHECK(name) CHECK(snap.name == ++n);
    KJIT_CACHE_COUNTERS(KJIT_TEST_CHECK)
#undef KJIT_TEST_CHECK
    StatsSnapshot twice = snap;
    twice += snap;
    n = 0;
#define KJIT_TEST_CHECK(name) CHECK(twice.name == 2 * ++n);
    KJIT_CACHE_COUNTERS(KJIT_TEST_CHECK)
#undef KJIT_TEST_CHECK
    twice -= snap;
    CHECK(twice == snap);
    twice -= snap;
    twice -= snap;
    CHECK(twice == StatsSnapshot{});
  }
}
