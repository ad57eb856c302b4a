// kjit::cache::Signer and the remote values it seals, alone and through a RemoteTier against a
// real redis-server: ed25519 key files (several public keys a file, for rotation; malformed ones
// named by line), the value formats (KJSG + HMAC tag, KJED + ed25519 signature), and a node that
// holds public keys only: it loads what the signing key signed, refuses unsigned, HMAC-only and
// forged values (counted in remote_rejected), and never writes nor locks.
#include "core/cache/remote/remote_tier.hpp"
#include "core/cache/remote/signer.hpp"
#include "support/redis_server.hpp"
#include "support/temp_dir.hpp"
#include "tests/unit/test_cache_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include <fmt/format.h>
#include <sys/stat.h>

using namespace kjit;
using namespace kjit::cache;
using namespace std::chrono_literals;

namespace {

std::uint64_t seed_of_test() {
  static const std::uint64_t seed = std::random_device{}();
  return seed;
}

// A key pair through the files `kjit cache keygen` writes.
struct Keys {
  std::string key_file, pub_file, pub_line;
};

Keys write_keys(const test::TempDir& dir, const std::string& name) {
  const Signer::KeyPair pair = Signer::generate_ed25519();
  Keys k{(dir / (name + ".key")).string(), (dir / (name + ".pub")).string(), pair.public_text};
  test::write_file(k.key_file, pair.secret_text);
  std::filesystem::permissions(k.key_file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  test::write_file(k.pub_file, pair.public_text);
  return k;
}

Signer load(const std::string& key_file, const std::string& pub_file) {
  auto s = Signer::ed25519_from_files(key_file, pub_file);
  REQUIRE_MESSAGE(s, (s ? "" : s.error().message));
  return std::move(*s);
}

std::string random_bytes(std::mt19937_64& rng, std::size_t n) {
  std::string out(n, '\0');
  for (auto& c : out) c = static_cast<char>(rng());
  return out;
}

}  // namespace

TEST_SUITE("Signer") {
  TEST_CASE("ed25519 signs with the key file and checks with any listed public key") {
    INFO("seed " << seed_of_test());
    std::mt19937_64 rng(seed_of_test());
    test::TempDir dir;
    const Keys old_key = write_keys(dir, "old"), new_key = write_keys(dir, "new"), other = write_keys(dir, "other");
    // A node's public key file during a rotation: both keys, a comment, a blank line.
    test::write_file(dir / "nodes.pub", "# CI keys\n" + old_key.pub_line + "\n" +
                                            new_key.pub_line.substr(0, new_key.pub_line.size() - 1) + " ci-2026\n");
    const Signer ci_old = load(old_key.key_file, ""), ci_new = load(new_key.key_file, "");
    const Signer node = load("", (dir / "nodes.pub").string());
    CHECK(ci_new.can_sign());
    CHECK_FALSE(node.can_sign());
    CHECK(node.sign("anything").empty());
    for (int i = 0; i < 20; ++i) {
      const std::string msg = random_bytes(rng, rng() % 5000);
      const std::string sig_old = ci_old.sign(msg), sig_new = ci_new.sign(msg);
      REQUIRE(sig_new.size() == Signer::k_signature_size);
      CHECK(node.verify(sig_old, msg));
      CHECK(node.verify(sig_new, msg));
      CHECK_FALSE(node.verify(load(other.key_file, "").sign(msg), msg));
      std::string forged = sig_new;
      forged[rng() % forged.size()] ^= static_cast<char>(1 << (rng() % 8));
      CHECK_FALSE(node.verify(forged, msg));
      if (!msg.empty()) {
        std::string changed = msg;
        changed[rng() % changed.size()] ^= 1;
        CHECK_FALSE(node.verify(sig_new, changed));
      }
      CHECK(ci_new.verify(sig_new, msg));  // the signing node checks with its own public key
    }
  }

  TEST_CASE("malformed key files are refused naming the file and the line") {
    test::TempDir dir;
    const Keys k = write_keys(dir, "ci");
    test::write_file(dir / "bad.pub", k.pub_line + "ed25519:abcd\n");
    auto bad = Signer::ed25519_from_files("", (dir / "bad.pub").string());
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message.find("line 2") != std::string::npos);
    test::write_file(dir / "empty.pub", "# nothing\n\n");
    CHECK_FALSE(Signer::ed25519_from_files("", (dir / "empty.pub").string()));
    test::write_file(dir / "bad.key", k.pub_line);  // a public key where the signing key goes
    auto wrong = Signer::ed25519_from_files((dir / "bad.key").string(), "");
    REQUIRE_FALSE(wrong);
    CHECK(wrong.error().message.find("ed25519-secret:") != std::string::npos);
    CHECK_FALSE(Signer::ed25519_from_files((dir / "missing.key").string(), ""));
    test::write_file(dir / "secret", "fleet secret\n");
    auto both = Signer::from_files((dir / "secret").string(), "", k.pub_file);
    REQUIRE_FALSE(both);
    CHECK(both.error().message.find("one way") != std::string::npos);
    CHECK_FALSE(Signer::from_files("", "", "")->has_value());
    CHECK(Signer::from_files((dir / "secret").string(), "", "").value()->scheme() == Signer::Scheme::hmac_sha256);
  }

  TEST_CASE("a signing key file its group or others may read is refused naming the file and its mode") {
    test::TempDir dir;
    const Keys k = write_keys(dir, "ci");  // 0600: used
    REQUIRE(Signer::ed25519_from_files(k.key_file, "").value().can_sign());
    for (const ::mode_t mode : {0644, 0640, 0604, 0620, 0400 | 0040}) {
      CAPTURE(mode);
      REQUIRE(::chmod(k.key_file.c_str(), mode) == 0);
      auto refused = Signer::ed25519_from_files(k.key_file, "");
      REQUIRE_FALSE(refused);
      const std::string& why = refused.error().message;
      CHECK(why.find(k.key_file) != std::string::npos);
      CHECK(why.find(fmt::format("mode {:04o}", mode)) != std::string::npos);
      CHECK(why.find("chmod 600") != std::string::npos);
      // Through the three variables read as one, as a Runtime and the CLI read them.
      CHECK_FALSE(Signer::from_files("", k.key_file, ""));
    }
    CHECK(Signer::ed25519_from_files(k.key_file, "").error().message.find("its group") != std::string::npos);
    REQUIRE(::chmod(k.key_file.c_str(), 0604) == 0);
    CHECK(Signer::ed25519_from_files(k.key_file, "").error().message.find("lets others read") != std::string::npos);
    for (const ::mode_t mode : {0400, 0600, 0700}) {  // private: used
      CAPTURE(mode);
      REQUIRE(::chmod(k.key_file.c_str(), mode) == 0);
      CHECK(Signer::ed25519_from_files(k.key_file, "").value().can_sign());
    }
    // Public keys are public: 0644 is what keygen writes for them.
    REQUIRE(::chmod(k.pub_file.c_str(), 0644) == 0);
    CHECK_FALSE(Signer::ed25519_from_files("", k.pub_file).value().can_sign());
  }

  TEST_CASE("sealed values open only under their own scheme and key") {
    INFO("seed " << seed_of_test());
    std::mt19937_64 rng(seed_of_test());
    const Signer ed = Signer::ed25519(random_bytes(rng, Signer::k_seed_size), {});
    const Signer other = Signer::ed25519(random_bytes(rng, Signer::k_seed_size), {});
    const Signer hmac("fleet secret");
    const Key key = test::test_key(rng());
    const std::string entry = serialize(key, test::test_entry(key, 1000 + rng() % 1000));
    const std::string ed_value = seal_value(&ed, entry), hmac_value = seal_value(&hmac, entry);
    CHECK(ed_value.substr(0, 4) == "KJED");
    CHECK(ed_value.size() == entry.size() + 4 + Signer::k_signature_size);
    CHECK(hmac_value.substr(0, 4) == "KJSG");
    CHECK(seal_value(nullptr, entry) == entry);
    CHECK(open_value(&ed, ed_value).value() == 4 + Signer::k_signature_size);
    CHECK(open_value(&hmac, hmac_value).value() == 4 + Signer::k_tag_size);
    CHECK(open_value(nullptr, entry).value() == 0);
    auto why = [](const system::Result<std::size_t>& r) { return r ? std::string() : r.error().message; };
    CHECK(why(open_value(&ed, hmac_value)).find("HMAC") != std::string::npos);
    CHECK(why(open_value(&hmac, ed_value)).find("ed25519") != std::string::npos);
    CHECK(why(open_value(&ed, entry)).find("no signature") != std::string::npos);
    CHECK(why(open_value(nullptr, ed_value)).find("KJIT_REMOTE_PUBLIC_KEY_FILE") != std::string::npos);
    CHECK(why(open_value(&other, ed_value)).find("not valid") != std::string::npos);
    CHECK_FALSE(open_value(&ed, ed_value.substr(0, 40)));
    // A public-key-only node seals nothing: it never signs.
    const Signer node = Signer::ed25519({}, {std::string(Signer::k_public_key_size, '\1')});
    CHECK(seal_value(&node, entry) == entry);
  }

  TEST_CASE("a public-key node loads what CI signed and refuses unsigned HMAC-only and forged values and never writes") {
    INFO("seed " << seed_of_test());
    std::mt19937_64 rng(seed_of_test());
    test::TempDir dir;
    test::RedisServer redis(dir / "redis");
    const Keys k = write_keys(dir, "ci");
    Stats ci_stats, node_stats, hmac_stats;
    auto open_tier = [&](Stats& stats, std::optional<Signer> signer) {
      RemoteConfig c;
      c.url = redis.url();
      c.signer = std::move(signer);
      c.timeouts = RemoteTimeouts{2s, 2s};  // a loaded test machine must not turn a hit into a miss
      auto t = RemoteTier::open(std::move(c), stats, {});
      REQUIRE(t);
      return std::move(*t);
    };
    auto ci = open_tier(ci_stats, load(k.key_file, ""));
    auto hmac = open_tier(hmac_stats, Signer("fleet secret"));
    auto node = open_tier(node_stats, load("", k.pub_file));
    CHECK(node->read_only());
    CHECK_FALSE(ci->read_only());

    std::vector<Key> keys;
    for (int i = 0; i < 4; ++i) keys.push_back(test::test_key(rng()));
    auto entry = [&](const Key& key) { return serialize(key, test::test_entry(key, 2000)); };
    CHECK(ci->put_async(keys[0], entry(keys[0])));
    CHECK(ci->put_async(keys[1], entry(keys[1])));
    CHECK(hmac->put_async(keys[2], entry(keys[2])));  // HMAC-only
    ci->drain();
    hmac->drain();
    redis.set("kjit:" + keys[3].hex(), entry(keys[3]));  // unsigned
    std::string forged = *redis.get("kjit:" + keys[1].hex());
    forged[4 + rng() % Signer::k_signature_size] ^= 0x10;  // the signature changed
    redis.set("kjit:" + keys[1].hex(), forged);
    auto sorted_keys = [&] {
      auto names = redis.keys("*");
      std::sort(names.begin(), names.end());
      return names;
    };
    const auto keys_before = sorted_keys();

    RemoteGet hit = node->get(keys[0]);
    REQUIRE(hit.outcome == RemoteGet::Outcome::hit);
    CHECK(hit.bytes == entry(keys[0]));
    CHECK(node->get(keys[1]).outcome == RemoteGet::Outcome::rejected);
    CHECK(node->get(keys[2]).outcome == RemoteGet::Outcome::rejected);
    CHECK(node->get(keys[3]).outcome == RemoteGet::Outcome::rejected);
    CHECK(node_stats.snapshot().remote_rejected == 3);
    CHECK(node_stats.snapshot().remote_hits == 1);

    // It never writes nor locks: a compile's write is not sent, its lock never taken.
    const Key fresh = test::test_key(rng());
    CHECK_FALSE(node->put_async(fresh, entry(fresh)));
    CHECK(node->lock_or_wait(fresh, 1s, 1s, {}).outcome == RemoteLock::Outcome::unavailable);
    node->drain();
    CHECK(sorted_keys() == keys_before);
    CHECK(node_stats.snapshot().remote_writes == 0);
    // The HMAC node, for its part, refuses CI's ed25519 values.
    CHECK(hmac->get(keys[0]).outcome == RemoteGet::Outcome::rejected);
  }
}
