// kjit::cache::RemoteTier over levels (a real redis-server, then a real nginx with WebDAV PUT):
// gets ask the levels in order and a slower level's hit is written back to the faster ones,
// writes reach every level, the fleet lock lives on Redis (an HTTP level alone takes none), each
// level backs off on its own, and HTTP trouble (401, 404, 500, a slow server, one that closes
// mid-body, a damaged value) is a miss, never a hit, counted in remote_http_errors.
#include "core/cache/remote/remote_tier.hpp"
#include "support/http_server.hpp"
#include "support/http_unavailable.hpp"
#include "support/redis_server.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tests/unit/test_cache_support.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sodium.h>

#include <chrono>
#include <filesystem>
#include <mutex>
#include <thread>

using namespace kjit;
using namespace kjit::cache;
using namespace kjit::system;
using namespace std::chrono_literals;

namespace {

std::string entry_bytes(const Key& key, std::size_t size = 5000) { return serialize(key, test::test_entry(key, size)); }
std::string value_name(const Key& key) { return "kjit:" + key.hex(); }

// The file nginx keeps for a key's value: <root>/ac/<sha256 of "kjit:<key>">.
std::filesystem::path http_file(const test::NginxServer& nginx, const Key& key, const std::string& location = "kjit") {
  const std::string name = value_name(key);
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(digest, reinterpret_cast<const unsigned char*>(name.data()), name.size());
  std::string hex;
  for (unsigned char b : digest) hex += fmt::format("{:02x}", b);
  return nginx.root(location) / "ac" / hex;
}

// A tier's log and counters, for tiers over any list of levels.
struct Tiers {
  Stats stats;
  std::mutex log_mutex;
  std::vector<std::pair<RemoteTier::Severity, std::string>> log;

  std::unique_ptr<RemoteTier> tier(RemoteConfig c) {
    auto t = RemoteTier::open(std::move(c), stats, [this](RemoteTier::Severity s, std::string_view m) {
      std::lock_guard lock(log_mutex);
      log.emplace_back(s, std::string(m));
    });
    REQUIRE_MESSAGE(t, (t ? "" : t.error().message));
    return std::move(*t);
  }
  std::unique_ptr<RemoteTier> tier(const std::string& url) {
    RemoteConfig c;
    c.url = url;
    c.timeouts = {1s, 2s};
    return tier(std::move(c));
  }
  std::size_t warnings() {
    std::lock_guard lock(log_mutex);
    std::size_t n = 0;
    for (auto& [s, m] : log) n += s == RemoteTier::Severity::warning;
    return n;
  }
  std::string all_log() {
    std::lock_guard lock(log_mutex);
    std::string out;
    for (auto& [s, m] : log) out += m + "\n";
    return out;
  }
};

}  // namespace

TEST_SUITE("RemoteTier") {
  TEST_CASE("an HTTP level alone: a fresh tier hits what another wrote, signed, and no fleet lock is taken or warned of") {
    if (auto why = test::http_unavailable(); !why.empty()) KJIT_SKIP(why);
    test::TempDir tmp;
    test::NginxServer nginx(tmp / "nginx");
    Tiers t;
    RemoteConfig c;
    c.url = nginx.url();
    c.signer = Signer("fleet secret 7");
    auto writer = t.tier(c);
    const Key key = test::test_key(501);
    const std::string bytes = entry_bytes(key);
    REQUIRE(writer->put_async(key, bytes));
    writer->drain();
    CHECK(test::read_file(http_file(nginx, key)).substr(0, 4) == "KJSG");

    auto reader = t.tier(c);  // another node: its own connections
    RemoteGet g = reader->get(key);
    REQUIRE(g.outcome == RemoteGet::Outcome::hit);
    CHECK(g.bytes == bytes);
    CHECK(reader->get(test::test_key(502)).outcome == RemoteGet::Outcome::miss);
    auto unsigned_reader = t.tier(nginx.url());
    CHECK(unsigned_reader->get(key).outcome == RemoteGet::Outcome::rejected);

    const auto start = std::chrono::steady_clock::now();
    RemoteLock l = reader->lock_or_wait(test::test_key(503), 10s, 1s, {});
    CHECK(l.outcome == RemoteLock::Outcome::unavailable);
    CHECK(l.message.find("no level with locks") != std::string::npos);
    CHECK(std::chrono::steady_clock::now() - start < 2s);  // no wait: answered at once

    const StatsSnapshot s = t.stats.snapshot();
    CHECK(s.remote_hits == 1);
    CHECK(s.remote_http_hits == 1);
    CHECK(s.remote_misses == 2);
    CHECK(s.remote_rejected == 1);
    CHECK(s.remote_writes == 1);
    CHECK(s.remote_errors == 0);
    CHECK(s.remote_http_errors == 0);
    CHECK(t.warnings() == 1);  // the unsigned reader's rejection, nothing of locks
    auto pong = reader->ping();
    REQUIRE(pong);
    CHECK(pong->starts_with("http 404 nginx"));
  }

  TEST_CASE("levels chain in order: writes reach both and a hit in HTTP is written back to Redis which answers next") {
    if (auto why = test::http_unavailable(); !why.empty()) KJIT_SKIP(why);
    test::TempDir tmp;
    test::RedisServer redis(tmp / "redis");
    test::NginxServer nginx(tmp / "nginx");
    Tiers t;
    auto tier = t.tier(redis.url() + "," + nginx.url());
    std::vector<Key> keys;
    for (int i = 0; i < 4; ++i) keys.push_back(test::test_key(600 + static_cast<std::uint64_t>(i)));
    for (const Key& k : keys) REQUIRE(tier->put_async(k, entry_bytes(k, 3000 + k.bytes[0])));
    tier->drain();
    for (const Key& k : keys) {
      CHECK(redis.get(value_name(k)) == entry_bytes(k, 3000 + k.bytes[0]));
      CHECK(test::read_file(http_file(nginx, k)) == entry_bytes(k, 3000 + k.bytes[0]));
    }
    CHECK(t.stats.snapshot().remote_writes == 8);  // one a level

    redis.restart();  // lost everything (no persistence)
    for (const Key& k : keys) {
      RemoteGet g = tier->get(k);
      REQUIRE(g.outcome == RemoteGet::Outcome::hit);
      CHECK(g.bytes == entry_bytes(k, 3000 + k.bytes[0]));
    }
    tier->drain();
    StatsSnapshot s = t.stats.snapshot();
    CHECK(s.remote_http_hits == 4);
    CHECK(s.remote_backfills == 4);
    for (const Key& k : keys) CHECK(redis.get(value_name(k)) == entry_bytes(k, 3000 + k.bytes[0]));

    // Redis answers now: HTTP is not asked (it is not even there).
    nginx.kill();
    for (const Key& k : keys) CHECK(tier->get(k).outcome == RemoteGet::Outcome::hit);
    CHECK(t.stats.snapshot().remote_http_hits == 4);
    CHECK(t.stats.snapshot().remote_http_errors == 0);
    nginx.start();

    // A damaged value in Redis: rejected (one warning), HTTP's good one loaded and written back.
    std::string damaged = entry_bytes(keys[0], 3000 + keys[0].bytes[0]);
    damaged[damaged.size() / 2] = static_cast<char>(damaged[damaged.size() / 2] ^ 0x10);
    redis.set(value_name(keys[0]), damaged);
    const std::size_t warnings = t.warnings();
    RemoteGet g = tier->get(keys[0]);
    REQUIRE(g.outcome == RemoteGet::Outcome::hit);
    CHECK(g.bytes == entry_bytes(keys[0], 3000 + keys[0].bytes[0]));
    CHECK(t.warnings() == warnings + 1);
    tier->drain();
    CHECK(redis.get(value_name(keys[0])) == entry_bytes(keys[0], 3000 + keys[0].bytes[0]));

    // A read-only node reads the slower level and writes nothing back.
    redis.restart();
    RemoteConfig ro;
    ro.url = redis.url() + "," + nginx.url();
    ro.read_only = true;
    auto reader = t.tier(ro);
    CHECK(reader->get(keys[1]).outcome == RemoteGet::Outcome::hit);
    reader->drain();
    CHECK(redis.dbsize() == 0);

    // The fleet lock is Redis's.
    RemoteLock l = tier->lock_or_wait(test::test_key(650), 5s, 1s, {});
    REQUIRE(l.outcome == RemoteLock::Outcome::acquired);
    CHECK(redis.keys("kjit:lock:*").size() == 1);
    tier->release_async(test::test_key(650), l.token);
    tier->drain();
    CHECK(redis.keys("kjit:lock:*").empty());
  }

  TEST_CASE("an unsigned node never replaces a signed value over HTTP nor by a backfill into Redis") {
    if (auto why = test::http_unavailable(); !why.empty()) KJIT_SKIP(why);
    test::TempDir tmp;
    test::RedisServer redis(tmp / "redis");
    test::NginxServer nginx(tmp / "nginx");
    Tiers t;
    std::string seed(Signer::k_seed_size, '\0');
    randombytes_buf(seed.data(), seed.size());
    RemoteConfig ci_config;
    ci_config.url = redis.url() + "," + nginx.url();
    ci_config.signer = Signer::ed25519(seed, {});
    auto ci = t.tier(ci_config);
    auto keyless = t.tier(redis.url() + "," + nginx.url());

    const Key signed_key = test::test_key(23101), fresh_key = test::test_key(23102);
    REQUIRE(ci->put_async(signed_key, entry_bytes(signed_key)));
    ci->drain();
    const std::string signed_http = test::read_file(http_file(nginx, signed_key));
    const std::string signed_redis = *redis.get(value_name(signed_key));
    REQUIRE(signed_http.substr(0, 4) == "KJED");

    // Its own write: kept on both levels (HTTP: a Range GET of the value's start, then no PUT).
    CHECK(keyless->get(signed_key).outcome == RemoteGet::Outcome::rejected);
    CHECK(keyless->put_async(signed_key, entry_bytes(signed_key, 7000)));
    keyless->drain();
    CHECK(test::read_file(http_file(nginx, signed_key)) == signed_http);
    CHECK(*redis.get(value_name(signed_key)) == signed_redis);

    // A backfill: Redis holds the signed value (rejected here), HTTP an unsigned one (a hit).
    test::write_file(http_file(nginx, signed_key), entry_bytes(signed_key));
    RemoteGet g = keyless->get(signed_key);
    REQUIRE(g.outcome == RemoteGet::Outcome::hit);
    keyless->drain();
    CHECK(*redis.get(value_name(signed_key)) == signed_redis);

    // What is absent or unsigned is written as before.
    CHECK(keyless->put_async(fresh_key, entry_bytes(fresh_key)));
    keyless->drain();
    CHECK(test::read_file(http_file(nginx, fresh_key)) == entry_bytes(fresh_key));
    CHECK(*redis.get(value_name(fresh_key)) == entry_bytes(fresh_key));
    std::size_t puts = 0, ranges = 0;
    // nginx logs a request once it has answered it: the last line may come a moment later.
    for (int attempt = 0; attempt < 50 && (puts < 2 || ranges < 1); ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(20ms);
      puts = ranges = 0;
      for (const std::string& line : nginx.requests()) {
        puts += line.find(" PUT ") != std::string::npos;
        ranges += line.find(" GET ") != std::string::npos && line.ends_with(" 206");
      }
    }
    CHECK(puts == 2);    // CI's, and the fresh key's
    CHECK(ranges == 1);  // the value's start, read before a write over it
    const StatsSnapshot s = t.stats.snapshot();
    CHECK(s.remote_dropped == 3);  // two levels of its own write, one backfill
    CHECK(s.remote_errors == 0);
    std::size_t told = 0;
    {
      std::lock_guard lock(t.log_mutex);
      for (auto& [severity, message] : t.log) {
        told += severity == RemoteTier::Severity::warning && message.find("holds signed values") != std::string::npos;
      }
    }
    CHECK(told == 1);
  }

  TEST_CASE("a store that refuses every PUT: its writes back off with one warning while its reads go on") {
    if (auto why = test::http_unavailable(); !why.empty()) KJIT_SKIP(why);
    test::TempDir tmp;
    test::NginxServer nginx(tmp / "nginx");
    Tiers t;
    RemoteConfig c;
    c.url = nginx.url("full");  // a PUT over 1 KiB: 413
    c.timeouts = {1s, 2s};
    c.failures_before_backoff = 3;
    c.backoff = 300ms;
    auto tier = t.tier(c);
    const Key present = test::test_key(23201);
    std::filesystem::create_directories(http_file(nginx, present, "full").parent_path());
    test::write_file(http_file(nginx, present, "full"), entry_bytes(present));

    // A node's life: a miss, a compile, its write; a hit now and then. The reads succeed between
    // the refused writes, and never reset their count.
    std::uint64_t fresh = 23300;
    auto round = [&] {
      const Key k = test::test_key(fresh++);
      CHECK(tier->get(k).outcome == RemoteGet::Outcome::miss);
      tier->put_async(k, entry_bytes(k, 2000 + (fresh % 7) * 100));
      tier->drain();
      CHECK(tier->get(present).outcome == RemoteGet::Outcome::hit);
    };
    for (int i = 0; i < 8; ++i) round();
    // nginx logs a request once it has answered it: the last line may come a moment later.
    auto count_puts = [&] {
      std::size_t n = 0;
      for (int attempt = 0; attempt < 10; ++attempt) {
        std::this_thread::sleep_for(20ms);
        std::size_t now = 0;
        for (const std::string& line : nginx.requests()) now += line.find(" PUT ") != std::string::npos;
        if (now == n && attempt > 0) break;
        n = now;
      }
      return n;
    };
    CHECK(count_puts() == 3);  // then skipped: not even sent
    StatsSnapshot s = t.stats.snapshot();
    CHECK(s.remote_writes == 0);
    CHECK(s.remote_dropped == 5);
    CHECK(s.remote_hits == 8);
    CHECK(s.remote_misses == 8);
    CHECK(s.remote_http_errors == 3);
    REQUIRE(t.warnings() == 1);
    const std::string log = t.all_log();
    CHECK(log.find("HTTP 413") != std::string::npos);
    CHECK(log.find(nginx.url("full")) != std::string::npos);
    CHECK(log.find("still serves reads") != std::string::npos);
    CHECK(log.find("answers again") == std::string::npos);  // never down: it answers

    // After the back-off one write tries it again (a probe), is refused, and it backs off again,
    // saying nothing more.
    std::this_thread::sleep_for(400ms);
    for (int i = 0; i < 4; ++i) round();
    CHECK(count_puts() == 4);
    CHECK(t.warnings() == 1);

    // A small value it takes ends the refusal: writes go on.
    std::this_thread::sleep_for(400ms);
    const Key small = test::test_key(23250);
    const std::string small_entry = serialize(small, test::test_entry(small, 100));
    REQUIRE(small_entry.size() < 1024);
    CHECK(tier->put_async(small, small_entry));
    tier->drain();
    CHECK(t.stats.snapshot().remote_writes == 1);
    CHECK(t.all_log().find("takes writes again") != std::string::npos);
    CHECK(tier->get(small).outcome == RemoteGet::Outcome::hit);
  }

  TEST_CASE("each level backs off on its own: Redis paused HTTP still serves and HTTP failing Redis still serves") {
    if (auto why = test::http_unavailable(); !why.empty()) KJIT_SKIP(why);
    test::TempDir tmp;
    test::RedisServer redis(tmp / "redis");
    test::NginxServer nginx(tmp / "nginx");
    Tiers t;
    RemoteConfig c;
    c.url = redis.url() + "," + nginx.url();
    c.timeouts = {50ms, 50ms};
    c.backoff = 30s;
    auto tier = t.tier(c);
    const Key key = test::test_key(700);
    REQUIRE(tier->put_async(key, entry_bytes(key)));
    tier->drain();

    redis.pause();
    for (int i = 0; i < 10; ++i) CHECK(tier->get(key).outcome == RemoteGet::Outcome::hit);
    StatsSnapshot s = t.stats.snapshot();
    CHECK(s.remote_timeouts == 3);  // three, then Redis is skipped
    CHECK(s.remote_http_hits == 10);
    CHECK(s.remote_http_errors == 0);
    CHECK(t.warnings() == 1);
    // A write while Redis is skipped still reaches HTTP (Redis's share is dropped, counted).
    const Key other = test::test_key(701);
    REQUIRE(tier->put_async(other, entry_bytes(other)));
    tier->drain();
    CHECK(std::filesystem::exists(http_file(nginx, other)));
    CHECK(t.stats.snapshot().remote_dropped == 1);
    redis.resume();

    // HTTP failing (a 500 for everything): Redis serves, HTTP's errors are counted as its own.
    Tiers u;
    RemoteConfig b = c;
    b.url = redis.url() + "," + nginx.url("broken");
    auto broken = u.tier(b);
    CHECK(broken->get(key).outcome == RemoteGet::Outcome::hit);
    const Key third = test::test_key(702);
    REQUIRE(broken->put_async(third, entry_bytes(third)));
    broken->drain();
    CHECK(redis.get(value_name(third)) == entry_bytes(third));
    CHECK(broken->get(test::test_key(703)).outcome == RemoteGet::Outcome::miss);  // Redis: absent; HTTP: 500
    s = u.stats.snapshot();
    CHECK(s.remote_http_errors == 2);
    CHECK(s.remote_errors == 2);
    CHECK(s.remote_hits == 1);
    CHECK_FALSE(broken->ping());
  }

  TEST_CASE("HTTP trouble is a miss and never a hit: 401 500 a slow server one that closes mid-body damage and 404") {
    if (auto why = test::http_unavailable(); !why.empty()) KJIT_SKIP(why);
    test::TempDir tmp;
    test::NginxServer nginx(tmp / "nginx");
    const Key key = test::test_key(800);
    const std::string good = entry_bytes(key);
    {  // the value is there, behind basic auth
      test::write_file(tmp / "auth", fmt::format("{}:{}\n", test::NginxServer::k_user, test::NginxServer::k_password));
      Tiers t;
      RemoteConfig c;
      c.url = nginx.url("auth");
      c.http_auth_file = (tmp / "auth").string();
      auto w = t.tier(c);
      REQUIRE(w->put_async(key, good));
      w->drain();
      CHECK(w->get(key).outcome == RemoteGet::Outcome::hit);
      CHECK(std::filesystem::exists(http_file(nginx, key, "auth")));
    }
    test::ScriptedHttpServer slow("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(good.size()) + "\r\n\r\n",
                                  test::ScriptedHttpServer::After::trickle);
    test::ScriptedHttpServer cut("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(good.size()) + "\r\n\r\n" +
                                     good.substr(0, good.size() / 2),
                                 test::ScriptedHttpServer::After::close);
    test::write_file(tmp / "wrong", "kjit:wrongpass-77\n");
    struct Case {
      std::string name, url, auth;
      RemoteGet::Outcome outcome;
      bool error;
    };
    std::string flipped = good;
    flipped[good.size() - 10] = static_cast<char>(flipped[good.size() - 10] ^ 1);
    test::write_file(http_file(nginx, key), flipped);  // a damaged value in the open location
    const std::vector<Case> cases{
        {"401 without credentials", nginx.url("auth"), "", RemoteGet::Outcome::unavailable, true},
        {"401 with wrong ones", nginx.url("auth"), (tmp / "wrong").string(), RemoteGet::Outcome::unavailable, true},
        {"401 without a token", nginx.url("bearer"), "", RemoteGet::Outcome::unavailable, true},
        {"500", nginx.url("broken"), "", RemoteGet::Outcome::unavailable, true},
        {"slow", slow.url(), "", RemoteGet::Outcome::unavailable, true},
        {"closes mid-body", cut.url(), "", RemoteGet::Outcome::unavailable, true},
        {"damaged", nginx.url(), "", RemoteGet::Outcome::rejected, false},
    };
    for (const Case& k : cases) {
      CAPTURE(k.name);
      Tiers t;
      RemoteConfig c;
      c.url = k.url;
      c.http_auth_file = k.auth;
      c.timeouts = {50ms, 100ms};
      auto tier = t.tier(c);
      RemoteGet g = tier->get(key);
      CHECK(g.outcome == k.outcome);
      CHECK(g.bytes.empty());
      CHECK(g.message.find("wrongpass-77") == std::string::npos);
      CHECK(t.all_log().find("wrongpass-77") == std::string::npos);
      const StatsSnapshot s = t.stats.snapshot();
      CHECK(s.remote_hits == 0);
      CHECK(s.remote_misses == 1);
      CHECK(s.remote_http_errors == (k.error ? 1u : 0u));
      CHECK(s.remote_rejected == (k.error ? 0u : 1u));
    }
    // A real 404: the bearer location with its token, nothing stored there.
    test::write_file(tmp / "token", fmt::format("Bearer {}\n", test::NginxServer::k_token));
    Tiers t;
    RemoteConfig c;
    c.url = nginx.url("bearer");
    c.http_auth_file = (tmp / "token").string();
    auto tier = t.tier(c);
    CHECK(tier->get(key).outcome == RemoteGet::Outcome::miss);
    CHECK(t.stats.snapshot().remote_http_errors == 0);
    REQUIRE(tier->put_async(key, good));
    tier->drain();
    CHECK(tier->get(key).outcome == RemoteGet::Outcome::hit);
  }

  TEST_CASE("the list: an empty entry or a bad credentials file is refused when the tier opens") {
    Stats stats;
    for (const char* bad : {"redis://a,,http://b", "redis://a,", ",http://b"}) {
      RemoteConfig c;
      c.url = bad;
      auto t = RemoteTier::open(c, stats, {});
      REQUIRE_FALSE(t);
      CHECK(t.error().message.find("is empty") != std::string::npos);
    }
    test::TempDir tmp;
    test::write_file(tmp / "creds", "no colon here\n");
    RemoteConfig c;
    c.url = "http://127.0.0.1:1/kjit";
    c.http_auth_file = (tmp / "creds").string();
    auto t = RemoteTier::open(c, stats, {});
    REQUIRE_FALSE(t);
    CHECK(t.error().message.find("user:password") != std::string::npos);
    CHECK(t.error().message.find("no colon here") == std::string::npos);
  }
}
