// kjit::cache::RemoteTier over several real redis-servers (shards): each key, its value and its
// lock live on the shard rendezvous hashing picks; a dead shard's keys are misses (counted),
// never errors and never written elsewhere, while the others hit; a server at maxmemory that
// refuses writes (noeviction: OOM) still serves its reads.
#include "core/cache/remote/remote_tier.hpp"
#include "support/redis_server.hpp"
#include "support/temp_dir.hpp"
#include "tests/unit/test_cache_support.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

using namespace kjit;
using namespace kjit::cache;
using namespace kjit::system;
using namespace std::chrono_literals;

namespace {

struct Shards {
  test::TempDir tmp;
  std::vector<std::unique_ptr<test::RedisServer>> servers;
  Stats stats;
  std::mutex log_mutex;
  std::vector<std::string> warnings;

  explicit Shards(int n, std::vector<std::string> extra = {}) {
    for (int i = 0; i < n; ++i) servers.push_back(std::make_unique<test::RedisServer>(tmp / fmt::format("r{}", i), extra));
  }
  // "unix:///.../r0/redis.sock,unix:///.../r1/redis.sock(2),..." with the given weights (default 1).
  std::string list(std::vector<double> weights = {}) const {
    std::string out;
    for (std::size_t i = 0; i < servers.size(); ++i) {
      out += (i ? "," : "") + servers[i]->url();
      if (i < weights.size()) out += fmt::format("({})", weights[i]);
    }
    return out;
  }
  std::unique_ptr<RemoteTier> tier(RemoteConfig c) {
    if (c.url.empty()) c.url = list();
    auto t = RemoteTier::open(std::move(c), stats, [this](RemoteTier::Severity s, std::string_view m) {
      std::lock_guard lock(log_mutex);
      if (s == RemoteTier::Severity::warning) warnings.emplace_back(m);
    });
    REQUIRE_MESSAGE(t, (t ? "" : t.error().message));
    return std::move(*t);
  }
  std::size_t warning_count() {
    std::lock_guard lock(log_mutex);
    return warnings.size();
  }
};

std::string entry_bytes(const Key& key, std::size_t size = 3000) { return serialize(key, test::test_entry(key, size)); }
std::string value_name(const Key& key) { return "kjit:" + key.hex(); }

}  // namespace

TEST_SUITE("RemoteTier") {
  TEST_CASE("shards: each key's value and lock live on its rendezvous shard and nowhere else") {
    Shards s(4);
    RemoteConfig c;
    c.url = s.list({1, 2, 1, 1});
    auto tier = s.tier(c);
    std::vector<std::size_t> per_shard(4);
    for (std::uint64_t i = 0; i < 60; ++i) {
      const Key key = test::test_key(1000 + i);
      REQUIRE(tier->put_async(key, entry_bytes(key)));
      ++per_shard[tier->shard_of(key)];
    }
    tier->drain();
    for (std::uint64_t i = 0; i < 60; ++i) {
      const Key key = test::test_key(1000 + i);
      const std::size_t home = tier->shard_of(key);
      for (std::size_t j = 0; j < 4; ++j) CHECK((s.servers[j]->get(value_name(key)).has_value()) == (j == home));
      CHECK(tier->get(key).outcome == RemoteGet::Outcome::hit);
    }
    for (std::size_t j = 0; j < 4; ++j) {
      CHECK(per_shard[j] > 0);  // 60 keys over 4 shards: each has some
      CHECK(s.servers[j]->dbsize() == static_cast<long long>(per_shard[j]));
    }
    // The fleet lock of a key is on its shard.
    const Key key = test::test_key(2000);
    RemoteLock lock = tier->lock_or_wait(key, 3s, 1s, {});
    REQUIRE(lock.outcome == RemoteLock::Outcome::acquired);
    for (std::size_t j = 0; j < 4; ++j) {
      CHECK(s.servers[j]->get("kjit:lock:" + key.hex()).has_value() == (j == tier->shard_of(key)));
    }
    // Another node waits on that shard, and gets the value its holder stores there.
    auto other = s.tier(c);
    REQUIRE(other->shard_of(key) == tier->shard_of(key));
    CHECK(other->lock_or_wait(key, 200ms, 1s, {}).outcome == RemoteLock::Outcome::timed_out);
    REQUIRE(tier->put_async(key, entry_bytes(key), lock.token));
    tier->drain();
    CHECK(other->lock_or_wait(key, 3s, 1s, {}).outcome == RemoteLock::Outcome::value);
    other->drain();  // a lock taken just as the value came is released in the background
    CHECK(s.servers[tier->shard_of(key)]->keys("kjit:lock:*").empty());
  }

  TEST_CASE("shards: a dead shard's keys miss and are counted while the others hit and nothing moves") {
    Shards s(4);
    RemoteConfig c;
    c.timeouts = {50ms, 50ms};
    c.failures_before_backoff = 3;
    c.backoff = 60s;
    auto tier = s.tier(c);
    std::vector<Key> keys;
    for (std::uint64_t i = 0; i < 80; ++i) keys.push_back(test::test_key(3000 + i));
    for (const Key& k : keys) REQUIRE(tier->put_async(k, entry_bytes(k)));
    tier->drain();
    const std::size_t dead = tier->shard_of(keys[0]);
    std::vector<long long> sizes;
    for (auto& server : s.servers) sizes.push_back(server->dbsize());
    s.servers[dead]->kill();

    std::size_t dead_keys = 0;
    for (int round = 0; round < 2; ++round) {
      for (const Key& k : keys) {
        RemoteGet g = tier->get(k);
        if (tier->shard_of(k) == dead) {
          CHECK(g.outcome == RemoteGet::Outcome::unavailable);  // a miss, not an error
          CHECK(g.shard == s.servers[dead]->url());
          dead_keys += round == 0;
        } else {
          CHECK(g.outcome == RemoteGet::Outcome::hit);  // the other shards are still used
        }
      }
    }
    REQUIRE(dead_keys >= 3);
    const StatsSnapshot st = s.stats.snapshot();
    // The first 3 reads of the dead shard failed (errors), the rest were skipped: shard_down.
    CHECK(st.remote_errors == 3);
    CHECK(st.remote_shard_down == 2 * dead_keys - 3);
    CHECK(st.remote_hits == 2 * (keys.size() - dead_keys));
    CHECK(s.warning_count() == 1);
    const std::vector<RemoteShardState> states = tier->shards();
    for (std::size_t j = 0; j < 4; ++j) CHECK(states[j].down == (j == dead));

    // A dead shard's keys are written nowhere else: dropped, counted.
    const std::uint64_t dropped = st.remote_dropped;
    for (const Key& k : keys) {
      if (tier->shard_of(k) == dead) CHECK_FALSE(tier->put_async(k, entry_bytes(k)));
      if (tier->shard_of(k) == dead) {
        CHECK(tier->lock_or_wait(k, 1s, 1s, {}).outcome == RemoteLock::Outcome::unavailable);
      }
    }
    tier->drain();
    CHECK(s.stats.snapshot().remote_dropped == dropped + dead_keys);
    for (std::size_t j = 0; j < 4; ++j) {
      if (j != dead) CHECK(s.servers[j]->dbsize() == sizes[j]);  // no value, no lock left behind
    }
  }

  TEST_CASE("shards: a server at maxmemory refuses writes and still serves every read") {
    // Debian's redis 7 starts near 0.9 MB: 1 MB holds the seeded values and a little more.
    Shards s(1, {"--maxmemory", "1mb", "--maxmemory-policy", "noeviction"});
    test::RedisServer& redis = *s.servers[0];
    RemoteConfig c;
    c.failures_before_backoff = 3;
    c.backoff = 60s;
    auto tier = s.tier(c);
    std::vector<Key> present;
    for (std::uint64_t i = 0; i < 8; ++i) {
      present.push_back(test::test_key(4000 + i));
      REQUIRE(tier->put_async(present.back(), entry_bytes(present.back())));
    }
    tier->drain();
    REQUIRE(redis.dbsize() == 8);
    std::string refusal;
    for (int i = 0; refusal.empty() && i < 10000; ++i) {
      refusal = redis.try_set(fmt::format("filler:{}", i), std::string(4096, 'f'));
    }
    REQUIRE_MESSAGE(refusal.rfind("OOM", 0) == 0, refusal);

    // Many requests: misses that compile without a lock (refused) and send in a burst, as a
    // node's worker does (refused), then reads of what the server holds.
    std::uint64_t fresh_number = 5000;
    for (int round = 0; round < 10; ++round) {
      std::vector<Key> fresh;
      for (int j = 0; j < 4; ++j) {
        fresh.push_back(test::test_key(fresh_number++));
        CHECK(tier->get(fresh.back()).outcome == RemoteGet::Outcome::miss);
        RemoteLock l = tier->lock_or_wait(fresh.back(), 1s, 1s, {});
        CHECK(l.outcome == RemoteLock::Outcome::unavailable);  // no lock: compile without one
        CHECK(l.token.empty());
      }
      for (const Key& k : fresh) tier->put_async(k, entry_bytes(k));
      tier->drain();
      for (int j = 0; j < 4; ++j) {
        RemoteGet g = tier->get(present[(4 * round + j) % present.size()]);
        CHECK(g.outcome == RemoteGet::Outcome::hit);  // reads go on
      }
    }
    const StatsSnapshot st = s.stats.snapshot();
    CHECK(st.remote_hits == 40);
    CHECK(st.remote_shard_down == 0);
    CHECK(st.remote_timeouts == 0);
    CHECK(st.remote_writes == 8);  // the seeded ones
    CHECK(st.remote_dropped >= 30);  // once it refused 3 in a row, writes are not even sent
    REQUIRE(s.warning_count() == 1);
    CHECK(s.warnings[0].find("OOM") != std::string::npos);
    CHECK(s.warnings[0].find("still serves reads") != std::string::npos);
    const RemoteShardState state = tier->shards().at(0);
    CHECK_FALSE(state.down);
    CHECK(state.refusing_writes);
    auto store = open_remote_store(redis.url(), {});
    REQUIRE(store);
    const auto why = (*store)->refuses_writes();
    REQUIRE(why.has_value());
    CHECK(why->find("maxmemory") != std::string::npos);
    CHECK(why->find("noeviction") != std::string::npos);

    // Room again: writes resume after the refusal's back-off.
    redis.config_set("maxmemory", "0");
    RemoteConfig quick = c;
    quick.backoff = 200ms;
    auto again = s.tier(quick);
    const Key fresh = test::test_key(6000);
    CHECK(again->put_async(fresh, entry_bytes(fresh)));
    again->drain();
    CHECK(again->get(fresh).outcome == RemoteGet::Outcome::hit);
    CHECK_FALSE((*store)->refuses_writes().has_value());
  }

  TEST_CASE("shards: shards then HTTP levels open and a bad list is refused at open") {
    Stats stats;
    {
      RemoteConfig c;
      c.url = "redis://a,redis://b(2),http://127.0.0.1:1/kjit";
      auto t = RemoteTier::open(c, stats, {});
      if (t) {
        REQUIRE((*t)->shards().size() == 2);  // the HTTP entry is a level after them
        CHECK((*t)->shards()[1].weight == 2);
      } else {
        CHECK_MESSAGE(t.error().message.find("built without the HTTP store") != std::string::npos, t.error().message);
      }
    }
    for (const char* bad : {"http://store(2)", "redis://a,,redis://b", "redis://a(0)", ""}) {
      RemoteConfig c;
      c.url = bad;
      auto t = RemoteTier::open(c, stats, {});
      CHECK_MESSAGE(!t, bad);
    }
  }
}
