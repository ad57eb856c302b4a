// tune::PublishedTable, the lock-free read side of a tuner's decisions and a spec tuner's shapes:
// every value published is found by its hash and match, values whose hashes collide are told
// apart, addresses never move while the table grows, and readers on other threads find every
// value a writer has published, while it keeps growing the table, without allocating or taking a
// lock (counted by LaunchProbe, which is shown to see both).
#include "core/tune/published_table.hpp"
#include "support/launch_probes.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Entry {
  std::string key;
  long long value = 0;
};

std::string random_key(std::mt19937_64& rng) {
  std::string k;
  const std::size_t n = 1 + rng() % 40;
  for (std::size_t i = 0; i < n; ++i) k.push_back(static_cast<char>('a' + rng() % 26));
  return k + std::to_string(rng());
}

}  // namespace

TEST_SUITE("PublishedTable") {
  TEST_CASE("published values are found by hash and match at the address they were given, absent ones are not") {
    std::mt19937_64 rng(41);
    kjit::tune::PublishedTable<Entry> table;
    std::vector<Entry> inserted;
    std::vector<std::uint64_t> hashes;
    std::vector<const Entry*> addresses;
    for (int i = 0; i < 3000; ++i) {  // grows from 16 slots many times
      Entry e{random_key(rng), static_cast<long long>(rng() | 1)};
      const std::uint64_t h = rng();
      inserted.push_back(e);
      hashes.push_back(h);
      addresses.push_back(&table.insert(h, e));
    }
    CHECK(table.size() == inserted.size());
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < inserted.size(); ++i) {
      const Entry* found = table.find(hashes[i], [&](const Entry& e) { return e.key == inserted[i].key; });
      wrong += found != addresses[i] || found == nullptr || found->value != inserted[i].value;
    }
    CHECK(wrong == 0);
    for (int i = 0; i < 100; ++i) {
      const std::string absent = random_key(rng) + "-absent";
      CHECK(table.find(rng(), [&](const Entry& e) { return e.key == absent; }) == nullptr);
    }
  }

  TEST_CASE("values whose hashes collide are told apart by the match") {
    kjit::tune::PublishedTable<Entry> table;
    for (long long i = 0; i < 40; ++i) table.insert(7, Entry{"k" + std::to_string(i), i * 3 + 1});
    for (long long i = 0; i < 40; ++i) {
      const std::string key = "k" + std::to_string(i);
      const Entry* e = table.find(7, [&](const Entry& v) { return v.key == key; });
      REQUIRE(e != nullptr);
      CHECK(e->value == i * 3 + 1);
    }
    CHECK(table.find(7, [](const Entry& v) { return v.key == "k40"; }) == nullptr);
    CHECK(table.find(8, [](const Entry& v) { return v.key == "k1"; }) == nullptr);
  }

  TEST_CASE("readers find every published value while a writer grows the table and neither allocate nor lock") {
    REQUIRE(kjit::test::lock_probe_sees_this_executable());
    constexpr int k_values = 20000;
    std::vector<std::string> keys;
    std::mt19937_64 rng(43);
    for (int i = 0; i < k_values; ++i) keys.push_back(random_key(rng));
    const auto hash = [](const std::string& k) { return std::hash<std::string>{}(k); };
    kjit::tune::PublishedTable<Entry> table;
    std::mutex writers;
    std::atomic<int> published{0};
    std::thread writer([&] {
      for (int i = 0; i < k_values; ++i) {
        std::lock_guard lock(writers);
        table.insert(hash(keys[static_cast<std::size_t>(i)]), Entry{keys[static_cast<std::size_t>(i)], i});
        published.store(i + 1, std::memory_order_release);
      }
    });
    std::atomic<long long> missing{0}, wrong{0}, reads{0};
    std::atomic<std::uint64_t> allocations{0}, locks{0};
    std::vector<std::thread> readers;
    for (int r = 0; r < 3; ++r) {
      readers.emplace_back([&, r] {
        std::mt19937 pick(static_cast<unsigned>(r + 1));
        long long n = 0, miss = 0, bad = 0;
        kjit::test::LaunchProbe probe;
        for (;;) {
          const int seen = published.load(std::memory_order_acquire);
          if (seen > 0) {
            const auto i = static_cast<std::size_t>(pick() % static_cast<unsigned>(seen));
            const std::string& key = keys[i];
            const Entry* e = table.find(hash(key), [&](const Entry& v) { return v.key == key; });
            ++n;
            if (e == nullptr) ++miss;
            else if (e->value != static_cast<long long>(i)) ++bad;
          }
          if (seen == k_values && n > 20000) break;
        }
        const auto counted = probe.stop();
        allocations += counted.allocations + counted.deallocations;
        locks += counted.locks;
        missing += miss;
        wrong += bad;
        reads += n;
      });
    }
    writer.join();
    for (auto& t : readers) t.join();
    CHECK(reads.load() > 60000);
    CHECK(missing.load() == 0);
    CHECK(wrong.load() == 0);
    CHECK(allocations.load() == 0);
    CHECK(locks.load() == 0);
  }
}
