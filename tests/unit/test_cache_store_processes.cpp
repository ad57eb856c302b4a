// Store shared by real processes (fork + exec of tests/tools/kjit_cache_worker): the
// compile-once protocol, SIGKILLed writers, eviction under readers, persistent stats.
#include "core/cache/store.hpp"

#include "support/temp_dir.hpp"
#include "tests/unit/test_cache_support.hpp"
#include "support/store_parts.hpp"

#include <doctest/doctest.h>

#include <map>
#include <random>
#include <sstream>

using namespace kjit::cache;
using namespace kjit::system;
using kjit::test::spawn_tool;
using kjit::test::TempDir;
using kjit::test::test_entry;
using kjit::test::test_key;
using kjit::test::wait_for;
using namespace std::chrono_literals;

namespace {

constexpr const char* k_worker = "kjit_cache_worker";

std::vector<std::string> lines_of(const std::filesystem::path& p) {
  std::vector<std::string> out;
  if (!std::filesystem::exists(p)) return out;
  std::istringstream in(kjit::test::read_file(p));
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string output_of(const std::filesystem::path& p) {
  return std::filesystem::exists(p) ? kjit::test::read_file(p) : std::string();
}

}  // namespace

TEST_SUITE("Store") {
  TEST_CASE("16 processes, 20 keys, empty store: each key compiled exactly once, no errors") {
    TempDir tmp;
    const auto dir = tmp / "cache", log = tmp / "compiles.log";
    constexpr int k_processes = 16, k_keys = 20;
    std::vector<pid_t> pids;
    for (int p = 0; p < k_processes; ++p) {
      pids.push_back(spawn_tool(k_worker,
                                {"protocol", dir.string(), log.string(), std::to_string(p), std::to_string(k_keys),
                                 "60000", "20000"},
                                (tmp / ("out" + std::to_string(p))).string()));
    }
    for (int p = 0; p < k_processes; ++p) {
      const auto status = wait_for(pids[p], 120s);
      CHECK_MESSAGE(status == 0, "process ", p, ": ", output_of(tmp / ("out" + std::to_string(p))));
    }
    std::map<std::string, int> compiles;
    for (const auto& line : lines_of(log)) compiles[line.substr(0, 32)] += 1;
    CHECK(compiles.size() == k_keys);
    for (int k = 0; k < k_keys; ++k) CHECK_MESSAGE(compiles[test_key(k).hex()] == 1, "key ", k);
    Store store({.dir = dir});
    const VerifyResult v = kjit::test::maintenance_of(store).verify();
    CHECK(v.ok == k_keys);
    CHECK(v.damaged.empty());
    for (int k = 0; k < k_keys; ++k) {
      const GetResult r = store.get(test_key(k));
      REQUIRE(r.outcome == GetResult::Outcome::hit);
      CHECK(kjit::test::entry_matches(*r.entry, test_key(k)));
    }
    CHECK(kjit::test::maintenance_of(store).usage().entries == k_keys);
    const bool lock_files_left = std::filesystem::exists(dir / "locks") && !std::filesystem::is_empty(dir / "locks");
    CHECK_FALSE(lock_files_left);
  }

  TEST_CASE("SIGKILL at random moments to writers: the next run never hangs and never gets a bad hit") {
    TempDir tmp;
    const auto dir = tmp / "cache";
    constexpr int k_rounds = 60, k_keys = 4;
    std::mt19937 rng(2026);
    int damaged_runs = 0;
    for (int round = 0; round < k_rounds; ++round) {
      CAPTURE(round);
      std::vector<pid_t> writers;
      for (int w = 0; w < 3; ++w) {
        writers.push_back(spawn_tool(k_worker, {"writer", dir.string(), std::to_string(round * 10 + w),
                                                std::to_string(k_keys), std::to_string(1 << 20)}));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(3 + rng() % 25));
      for (pid_t pid : writers) ::kill(pid, SIGKILL);
      for (pid_t pid : writers) wait_for(pid, 10s);
      // The next run: every key through the protocol, with a bounded lock wait.
      const auto out = tmp / "next";
      const pid_t next = spawn_tool(k_worker,
                                    {"protocol", dir.string(), (tmp / "log").string(), std::to_string(round),
                                     std::to_string(k_keys), "2000", std::to_string(1 << 20)},
                                    out.string());
      const auto status = wait_for(next, 30s);
      REQUIRE_MESSAGE(status.has_value(), "the run after a kill hung");
      const bool ok = status == 0 || status == 3;  // 3: damage detected (and removed), not returned
      CHECK_MESSAGE(ok, "status ", *status, ": ", output_of(out));
      damaged_runs += status == 3;
    }
    CHECK(damaged_runs == 0);  // rename publishes atomically: a kill never leaves a torn entry
    Store store({.dir = dir});
    const VerifyResult v = kjit::test::maintenance_of(store).verify();
    CHECK(v.damaged.empty());
    CHECK(v.ok == k_keys);
    // Killed writers may leave temporaries: they are not entries, and prune removes them once stale.
    CHECK(kjit::test::maintenance_of(store).list().size() == k_keys);
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
      if (e.path().filename().string().starts_with(".tmp.")) {
        std::filesystem::last_write_time(e.path(), std::filesystem::file_time_type::clock::now() - 1h);
      }
    }
    kjit::test::maintenance_of(store).prune(0);
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
      CHECK_FALSE(e.path().filename().string().starts_with(".tmp."));
    }
    CHECK(kjit::test::maintenance_of(store).list().size() == k_keys);
  }

  TEST_CASE("a lock held by a live, stuck process: waiters give up at the bound and compile themselves") {
    TempDir tmp;
    const auto dir = tmp / "cache";
    const auto held_out = tmp / "held";
    const pid_t holder = spawn_tool(k_worker, {"hold", dir.string(), "0"}, held_out.string());
    for (int i = 0; i < 2000 && output_of(held_out).find("locked") == std::string::npos; ++i) {
      std::this_thread::sleep_for(5ms);
    }
    REQUIRE(output_of(held_out).find("locked") != std::string::npos);
    const auto out = tmp / "out";
    const pid_t waiter = spawn_tool(
        k_worker, {"protocol", dir.string(), (tmp / "log").string(), "1", "1", "300", "1000"}, out.string());
    const auto status = wait_for(waiter, 30s);
    ::kill(holder, SIGKILL);
    wait_for(holder, 10s);
    REQUIRE(status.has_value());
    CHECK(*status == 0);
    CHECK(output_of(out).find("timeouts=1") != std::string::npos);
    CHECK(lines_of(tmp / "log").size() == 1);
    Store store({.dir = dir});
    CHECK(store.get(test_key(0)).outcome == GetResult::Outcome::hit);
  }

  TEST_CASE("eviction while 8 reader processes load entries: readers see only hits and misses") {
    TempDir tmp;
    const auto dir = tmp / "cache";
    constexpr int k_keys = 200, k_cubin = 32 * 1024;
    Store probe({.dir = tmp / "probe"});
    REQUIRE(probe.put(test_key(0), test_entry(test_key(0), k_cubin)).stored);
    const auto entry_size = std::filesystem::file_size(probe.entry_path(test_key(0)));
    Store store({.dir = dir, .max_size = entry_size * 40});
    for (int k = 0; k < 40; ++k) REQUIRE(store.put(test_key(k), test_entry(test_key(k), k_cubin)).stored);
    std::vector<pid_t> readers;
    const auto stop = tmp / "stop";
    for (int r = 0; r < 8; ++r) {
      readers.push_back(spawn_tool(k_worker, {"reader", dir.string(), std::to_string(k_keys), stop.string()},
                                   (tmp / ("reader" + std::to_string(r))).string()));
    }
    // Writes (each over the limit, so evicting) for at least 1.5 s and at least once every
    // missing key, however slow the machine; the readers run all along.
    std::uint64_t evicted = 0, puts = 0;
    const auto end = std::chrono::steady_clock::now() + 1500ms;
    for (int k = 40; puts < k_keys - 40 || std::chrono::steady_clock::now() < end; k = k + 1 == k_keys ? 0 : k + 1) {
      const PutResult p = store.put(test_key(k), test_entry(test_key(k), k_cubin));
      REQUIRE_MESSAGE(p.stored, p.message);
      evicted += p.evicted_entries;
      ++puts;
    }
    kjit::test::write_file(stop, "");
    std::uint64_t hits = 0;
    for (int r = 0; r < 8; ++r) {
      const auto status = wait_for(readers[r], 30s);
      const std::string out = output_of(tmp / ("reader" + std::to_string(r)));
      CHECK_MESSAGE(status == 0, "reader ", r, ": ", out);
      if (auto pos = out.find("hits="); pos != std::string::npos) hits += std::stoull(out.substr(pos + 5));
    }
    CHECK(evicted >= k_keys - 40);  // 160 new keys went in, and the store never holds more than 40
    CHECK(hits > 0);
    CHECK(kjit::test::maintenance_of(store).verify().damaged.empty());
    CHECK(kjit::test::maintenance_of(store).usage().bytes <= entry_size * 40);
    CHECK(kjit::test::maintenance_of(store).list().size() <= 40);
  }

  TEST_CASE("persistent stats accumulate across processes") {
    TempDir tmp;
    const auto dir = tmp / "cache";
    for (int p = 0; p < 2; ++p) {
      const pid_t pid = spawn_tool(k_worker, {"stats", dir.string(), "5"}, (tmp / "out").string());
      REQUIRE_MESSAGE(wait_for(pid, 30s) == 0, output_of(tmp / "out"));
    }
    Store store({.dir = dir});
    const StatsSnapshot s = kjit::test::stats_of(store).read();
    CHECK(s.misses == 10);
    CHECK(s.hits == 2);
    CHECK(s.bytes_written > 200);
    CHECK(s.bytes_read == s.bytes_written);
    CHECK(s.damaged == 0);
  }
}
