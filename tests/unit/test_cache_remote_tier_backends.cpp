// kjit::cache::RemoteTier: one suite, run on every backend against its real server (a
// redis-server, an nginx with WebDAV PUT, an s3rver that checks SigV4), so that the backends
// behave alike: signed values (a fresh node hits, an unsigned one rejects, a keyless writer never
// replaces them), the verify-only node (ed25519 public keys: reads, never writes), damage
// rejected; and for the levels after the shards (HTTP, S3): backfill into the Redis shards, the
// shards' locks, and a level that keeps missing what a later level hits saying so once.
#include "core/cache/remote/remote_backend.hpp"
#include "core/cache/remote/remote_tier.hpp"
#include "support/http_server.hpp"
#include "support/http_unavailable.hpp"
#include "support/redis_server.hpp"
#include "support/s3_server.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tests/unit/test_cache_support.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sodium.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>

using namespace kjit;
using namespace kjit::cache;
using namespace std::chrono_literals;

namespace {

std::string entry_bytes(const Key& key, std::size_t size = 6000) { return serialize(key, test::test_entry(key, size)); }
std::string value_name(const Key& key) { return "kjit:" + key.hex(); }

// One backend's server, started for a case, and what it holds, read and written around kjit's
// tier (through a store of its own: the layout on each server has its own tests).
struct Backend {
  virtual ~Backend() = default;
  virtual std::string url() const = 0;  // a KJIT_REMOTE_CACHE entry
  std::optional<std::string> raw(const Key& key) const {
    auto s = open_remote_store(url(), {{1s, 2s}, {}});
    REQUIRE_MESSAGE(s, (s ? "" : s.error().message));
    auto v = (*s)->get(value_name(key), 1ull << 30);
    REQUIRE_MESSAGE(v, (v ? "" : v.error().message));
    return *v;
  }
  void put_raw(const Key& key, const std::string& bytes) const {
    auto s = open_remote_store(url(), {{1s, 2s}, {}});
    REQUIRE(s);
    REQUIRE((*s)->put(value_name(key), bytes, 0ms));
  }
};

struct RedisBackend : Backend {
  explicit RedisBackend(const std::filesystem::path& dir) : server(dir / "redis") {}
  std::string url() const override { return server.url(); }
  test::RedisServer server;
};
struct HttpBackend : Backend {
  explicit HttpBackend(const std::filesystem::path& dir) : server(dir / "nginx") {}
  std::string url() const override { return server.url(); }
  test::NginxServer server;
};
struct S3Backend : Backend {
  explicit S3Backend(const std::filesystem::path& dir) : server(dir / "s3") { test::S3Server::use_credentials(); }
  std::string url() const override { return server.url("fleet/cache"); }
  test::S3Server server;
};

// A tier's log and counters.
struct Tiers {
  Stats stats;
  std::mutex log_mutex;
  std::vector<std::pair<RemoteTier::Severity, std::string>> log;

  std::unique_ptr<RemoteTier> tier(RemoteConfig c) {
    if (c.timeouts.reply == RemoteTimeouts{}.reply) c.timeouts = {1s, 2s};
    auto t = RemoteTier::open(std::move(c), stats, [this](RemoteTier::Severity s, std::string_view m) {
      std::lock_guard lock(log_mutex);
      log.emplace_back(s, std::string(m));
    });
    REQUIRE_MESSAGE(t, (t ? "" : t.error().message));
    return std::move(*t);
  }
  std::size_t warnings_with(std::string_view part) {
    std::lock_guard lock(log_mutex);
    std::size_t n = 0;
    for (auto& [s, m] : log) n += s == RemoteTier::Severity::warning && m.find(part) != std::string::npos;
    return n;
  }
};

RemoteConfig config(const std::string& url) {
  RemoteConfig c;
  c.url = url;
  return c;
}

// The behaviours every backend shares.
void signed_values(const Backend& b) {
  Tiers t;
  RemoteConfig signing = config(b.url());
  signing.signer = Signer("fleet secret 60");
  auto writer = t.tier(signing);
  const Key key = test::test_key(6001);
  REQUIRE(writer->put_async(key, entry_bytes(key)));
  writer->drain();
  const auto stored = b.raw(key);
  REQUIRE(stored);
  CHECK(stored->substr(0, 4) == "KJSG");

  auto reader = t.tier(signing);  // another node: its own connections
  RemoteGet g = reader->get(key);
  REQUIRE(g.outcome == RemoteGet::Outcome::hit);
  CHECK(g.bytes == entry_bytes(key));
  CHECK(reader->get(test::test_key(6002)).outcome == RemoteGet::Outcome::miss);

  // A node without the key: rejected, said once; its own write leaves the signed value alone.
  auto keyless = t.tier(config(b.url()));
  CHECK(keyless->get(key).outcome == RemoteGet::Outcome::rejected);
  CHECK(keyless->put_async(key, entry_bytes(key, 7000)));
  keyless->drain();
  CHECK(b.raw(key) == stored);
  CHECK(t.warnings_with("holds signed values") == 1);
  // A value signed with another secret: rejected by the fleet's nodes.
  auto stranger = t.tier([&] {
    RemoteConfig c = config(b.url());
    c.signer = Signer("another fleet");
    return c;
  }());
  CHECK(stranger->get(key).outcome == RemoteGet::Outcome::rejected);
  const StatsSnapshot s = t.stats.snapshot();
  CHECK(s.remote_writes == 1);
  CHECK(s.remote_hits == 1);
  CHECK(s.remote_rejected == 2);
  CHECK(s.remote_dropped == 1);
  CHECK(s.remote_errors == 0);
}

void verify_only_node(const Backend& b) {
  unsigned char seed[crypto_sign_SEEDBYTES], pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
  randombytes_buf(seed, sizeof seed);
  crypto_sign_seed_keypair(pk, sk, seed);
  Tiers t;
  RemoteConfig ci = config(b.url());
  ci.signer = Signer::ed25519(std::string_view(reinterpret_cast<const char*>(seed), sizeof seed), {});
  auto writer = t.tier(ci);
  const Key key = test::test_key(6101), other = test::test_key(6102);
  REQUIRE(writer->put_async(key, entry_bytes(key)));
  writer->drain();
  CHECK(b.raw(key)->substr(0, 4) == "KJED");

  RemoteConfig node = config(b.url());
  node.signer = Signer::ed25519({}, {std::string(reinterpret_cast<const char*>(pk), sizeof pk)});
  auto verifier = t.tier(node);
  CHECK(verifier->read_only());
  RemoteGet g = verifier->get(key);
  REQUIRE(g.outcome == RemoteGet::Outcome::hit);
  CHECK(g.bytes == entry_bytes(key));
  CHECK_FALSE(verifier->put_async(other, entry_bytes(other)));  // never writes
  verifier->drain();
  CHECK_FALSE(b.raw(other));
  // An unsigned value planted there: rejected by the verify-only node.
  b.put_raw(other, entry_bytes(other));
  CHECK(verifier->get(other).outcome == RemoteGet::Outcome::rejected);
  CHECK(t.stats.snapshot().remote_dropped == 0);  // a read-only node's writes are not drops
}

void damage_is_rejected(const Backend& b) {
  Tiers t;
  auto tier = t.tier(config(b.url()));
  const Key key = test::test_key(6201), moved = test::test_key(6202);
  std::string damaged = entry_bytes(key);
  damaged[damaged.size() / 2] = static_cast<char>(damaged[damaged.size() / 2] ^ 0x20);
  b.put_raw(key, damaged);
  b.put_raw(moved, entry_bytes(key));  // a whole entry under another key's name
  RemoteGet g = tier->get(key);
  CHECK(g.outcome == RemoteGet::Outcome::rejected);
  CHECK(g.bytes.empty());
  CHECK(tier->get(moved).outcome == RemoteGet::Outcome::rejected);
  CHECK(t.stats.snapshot().remote_rejected == 2);
}

// The behaviours of a level after the shards (HTTP, S3).
void backfill_and_shards(const Backend& b, const std::filesystem::path& dir) {
  test::RedisServer one(dir / "r1"), two(dir / "r2");
  Tiers t;
  const std::string list = one.url() + "," + two.url() + "(2)," + b.url();
  auto tier = t.tier(config(list));
  std::vector<Key> keys;
  for (std::uint64_t i = 0; i < 8; ++i) keys.push_back(test::test_key(6300 + i));
  for (const Key& k : keys) REQUIRE(tier->put_async(k, entry_bytes(k)));
  tier->drain();
  for (const Key& k : keys) {
    test::RedisServer& shard = tier->shard_of(k) == 0 ? one : two;
    CHECK(shard.get(value_name(k)) == entry_bytes(k));  // on its shard
    CHECK(b.raw(k) == entry_bytes(k));                  // and on the level
  }
  CHECK(t.stats.snapshot().remote_writes == 16);
  CHECK(one.dbsize() + two.dbsize() == 8);

  one.restart();  // empty: the level answers for its keys and they are written back there
  two.restart();
  for (const Key& k : keys) CHECK(tier->get(k).outcome == RemoteGet::Outcome::hit);
  tier->drain();
  StatsSnapshot s = t.stats.snapshot();
  CHECK(s.remote_http_hits == 8);
  CHECK(s.remote_backfills == 8);
  for (const Key& k : keys) CHECK((tier->shard_of(k) == 0 ? one : two).get(value_name(k)) == entry_bytes(k));

  // The fleet lock is the key's shard's (the level has none).
  const Key fresh = test::test_key(6399);
  RemoteLock l = tier->lock_or_wait(fresh, 5s, 1s, {});
  REQUIRE(l.outcome == RemoteLock::Outcome::acquired);
  CHECK((tier->shard_of(fresh) == 0 ? one : two).keys("kjit:lock:*").size() == 1);
  tier->release_async(fresh, l.token);
  tier->drain();
  CHECK(one.keys("kjit:lock:*").empty());
  CHECK(two.keys("kjit:lock:*").empty());
  // A tier of the level alone takes no lock, at once.
  Tiers u;
  CHECK(u.tier(config(b.url()))->lock_or_wait(fresh, 5s, 1s, {}).outcome == RemoteLock::Outcome::unavailable);
}

void a_level_that_keeps_missing_says_so_once(const Backend& b, const std::string& wrong) {
  Tiers t;
  auto writer = t.tier(config(b.url()));
  std::vector<Key> keys;
  for (std::uint64_t i = 0; i < 6; ++i) keys.push_back(test::test_key(6400 + i));
  for (const Key& k : keys) REQUIRE(writer->put_async(k, entry_bytes(k)));
  writer->drain();
  // A read-only node whose first level is the wrong place (nothing is written back there).
  RemoteConfig c = config(wrong + "," + b.url());
  c.read_only = true;
  c.miss_warning_after = 4;
  auto reader = t.tier(c);
  for (const Key& k : keys) CHECK(reader->get(k).outcome == RemoteGet::Outcome::hit);
  for (const Key& k : keys) CHECK(reader->get(k).outcome == RemoteGet::Outcome::hit);
  CHECK(t.warnings_with("missed its last 4 requests") == 1);
  std::lock_guard lock(t.log_mutex);
  for (auto& [s, m] : t.log) {
    if (m.find("missed its last") != std::string::npos) CHECK(m.find(redact_url(wrong)) != std::string::npos);
  }
}

template <class B>
void on(void (*body)(const Backend&)) {
  test::TempDir dir;
  B backend(dir.path());
  body(backend);
}

}  // namespace

TEST_SUITE("RemoteTier") {
  TEST_CASE("every backend: signed values hit on a fresh node and an unsigned node neither loads nor replaces them") {
    { on<RedisBackend>(signed_values); }
    if (auto why = test::http_unavailable(); why.empty()) on<HttpBackend>(signed_values);
    KJIT_REQUIRE_SERVER(test::s3_unavailable);
    on<S3Backend>(signed_values);
  }

  TEST_CASE("every backend: a verify-only node reads valid signatures and never writes") {
    { on<RedisBackend>(verify_only_node); }
    if (auto why = test::http_unavailable(); why.empty()) on<HttpBackend>(verify_only_node);
    KJIT_REQUIRE_SERVER(test::s3_unavailable);
    on<S3Backend>(verify_only_node);
  }

  TEST_CASE("every backend: a damaged value or one under another key's name is rejected") {
    { on<RedisBackend>(damage_is_rejected); }
    if (auto why = test::http_unavailable(); why.empty()) on<HttpBackend>(damage_is_rejected);
    KJIT_REQUIRE_SERVER(test::s3_unavailable);
    on<S3Backend>(damage_is_rejected);
  }

  TEST_CASE("an HTTP level after two shards: writes reach shard and level and a lost shard is backfilled") {
    if (auto why = test::http_unavailable(); !why.empty()) KJIT_SKIP(why);
    test::TempDir dir;
    HttpBackend b(dir.path());
    backfill_and_shards(b, dir.path());
  }

  TEST_CASE("an S3 level after two shards: writes reach shard and level and a lost shard is backfilled") {
    KJIT_REQUIRE_SERVER(test::s3_unavailable);
    test::TempDir dir;
    S3Backend b(dir.path());
    backfill_and_shards(b, dir.path());
  }

  TEST_CASE("a level that keeps missing what a later level hits warns once: an S3 prefix and an HTTP path") {
    KJIT_REQUIRE_SERVER(test::s3_unavailable);
    test::TempDir dir;
    S3Backend s3(dir.path());
    a_level_that_keeps_missing_says_so_once(s3, s3.server.url("fleet/wrong-prefix"));
    if (auto why = test::http_unavailable(); why.empty()) {
      HttpBackend http(dir.path());
      a_level_that_keeps_missing_says_so_once(http, http.server.url("full"));  // another location: nothing there
    }
  }
}
