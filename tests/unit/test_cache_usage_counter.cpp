#include "core/cache/usage_counter.hpp"

#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <thread>
#include <vector>

using namespace kjit::cache;
using namespace kjit::system;
using namespace std::chrono_literals;

TEST_SUITE("UsageCounter") {
  TEST_CASE("a new counter reads as unknown - write then read") {
    kjit::test::TempDir tmp;
    UsageCounter counter(tmp / "usage");
    CHECK_FALSE(counter.peek());
    {
      auto locked = counter.lock(1s);
      REQUIRE(locked);
      CHECK_FALSE(locked->read());
      REQUIRE(locked->write({3, 4096}));
      CHECK(locked->read() == Usage{3, 4096});
    }
    CHECK(counter.peek() == Usage{3, 4096});
  }

  TEST_CASE("a garbled counter reads as unknown") {
    kjit::test::TempDir tmp;
    kjit::test::write_file(tmp / "usage", "KJITUSE1 but far too long to be a counter");
    UsageCounter counter(tmp / "usage");
    CHECK_FALSE(counter.peek());
    kjit::test::write_file(tmp / "usage", "short");
    CHECK_FALSE(counter.lock(1s)->read());
  }

  TEST_CASE("the lock serializes read-modify-write across threads") {
    kjit::test::TempDir tmp;
    UsageCounter counter(tmp / "usage");
    counter.lock(1s)->write({0, 0});
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 100; ++i) {
          auto locked = counter.lock(10s);
          if (!locked) continue;
          Usage u = *locked->read();
          u.entries += 1;
          u.bytes += 10;
          locked->write(u);
        }
      });
    }
    for (auto& t : threads) t.join();
    CHECK(counter.peek() == Usage{400, 4000});
  }

  TEST_CASE("lock times out while another holds it") {
    kjit::test::TempDir tmp;
    UsageCounter counter(tmp / "usage");
    auto a = counter.lock(1s);
    REQUIRE(a);
    const auto b = counter.lock(50ms);
    REQUIRE_FALSE(b);
    CHECK_FALSE(b.error().message.empty());
    CHECK(b.error().timed_out());
  }
}
