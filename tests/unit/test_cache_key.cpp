#include "core/system/hash.hpp"
#include "core/cache/key.hpp"

#include <doctest/doctest.h>

#include <random>
#include <set>
#include <string>

using kjit::cache::Hasher;
using kjit::cache::Key;

TEST_SUITE("Hasher") {
  TEST_CASE("the same fields give the same key") {
    auto a = Hasher(1).field("source", "__global__ void k() {}").field("arch", "sm_90").finish();
    auto b = Hasher(1).field("source", "__global__ void k() {}").field("arch", "sm_90").finish();
    CHECK(a == b);
  }

  TEST_CASE("typed delimiters keep field boundaries apart") {
    // One option "-I -O2" against two options "-I" "-O2" against one option "-I-O2".
    const Key one = Hasher(1).field("option", "-I -O2").finish();
    const Key two = Hasher(1).field("option", "-I").field("option", "-O2").finish();
    const Key glued = Hasher(1).field("option", "-I-O2").finish();
    CHECK(one != two);
    CHECK(one != glued);
    CHECK(two != glued);
    // Moving bytes between label and value, or between two values, changes the key.
    CHECK(Hasher(1).field("ab", "c").finish() != Hasher(1).field("a", "bc").finish());
    CHECK(Hasher(1).field("x", "ab").field("x", "c").finish() != Hasher(1).field("x", "a").field("x", "bc").finish());
    // An empty field is still a field.
    CHECK(Hasher(1).field("x", "").finish() != Hasher(1).finish());
  }

  TEST_CASE("field order matters") {
    CHECK(Hasher(1).field("a", "1").field("b", "2").finish() != Hasher(1).field("b", "2").field("a", "1").finish());
  }

  TEST_CASE("a string field and a number field with the same bytes differ") {
    std::string eight(8, '\0');
    eight[0] = 7;
    CHECK(Hasher(1).field("n", eight).finish() != Hasher(1).field("n", std::uint64_t{7}).finish());
  }

  TEST_CASE("the key-format version changes every key") {
    CHECK(Hasher(1).field("source", "x").finish() != Hasher(2).field("source", "x").finish());
    CHECK(Hasher(1).finish() != Hasher(2).finish());
  }

  TEST_CASE("a change of one byte anywhere changes the key") {
    std::string source(1000, 'a');
    const Key base = Hasher(1).field("source", source).finish();
    std::set<std::string> seen{base.hex()};
    for (std::size_t i = 0; i < source.size(); i += 37) {
      std::string changed = source;
      changed[i] = 'b';
      const Key k = Hasher(1).field("source", changed).finish();
      CHECK(k != base);
      seen.insert(k.hex());
    }
    CHECK(seen.size() == 1 + (source.size() + 36) / 37);
  }

  TEST_CASE("fields() lists every field, long or binary values by size and digest") {
    Hasher h(3);
    h.field("arch", "sm_90").field("source", std::string(5000, 'x')).field("count", std::uint64_t{42});
    const auto& f = h.fields();
    REQUIRE(f.size() == 4);
    CHECK(f[0].label == "key-format");
    CHECK(f[0].value == "3");
    CHECK(f[1].value == "sm_90");
    CHECK(f[2].value.find("5000 bytes") != std::string::npos);
    CHECK(f[2].value.find("xxh3") != std::string::npos);
    CHECK(f[3].value == "42");
    const std::string text = h.describe();
    CHECK(text.starts_with("key-format: 3\narch: sm_90\nsource: <5000 bytes, xxh3 "));
    CHECK(text.ends_with("count: 42\nkey: " + h.finish().hex() + "\n"));
  }
}

TEST_SUITE("Key") {
  TEST_CASE("hex is 32 lowercase digits and from_hex reads it back") {
    for (int i = 0; i < 100; ++i) {
      const Key k = Hasher(1).field("i", std::uint64_t(i)).finish();
      const std::string hex = k.hex();
      CHECK(hex.size() == 32);
      CHECK(hex.find_first_not_of("0123456789abcdef") == std::string::npos);
      auto back = Key::from_hex(hex);
      REQUIRE(back);
      CHECK(*back == k);
    }
  }

  TEST_CASE("from_hex accepts upper case and refuses anything else") {
    const Key k = Hasher(1).finish();
    std::string upper = k.hex();
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    CHECK(Key::from_hex(upper) == k);
    CHECK_FALSE(Key::from_hex(""));
    CHECK_FALSE(Key::from_hex(k.hex().substr(1)));
    CHECK_FALSE(Key::from_hex(k.hex() + "0"));
    std::string bad = k.hex();
    bad[5] = 'g';
    CHECK_FALSE(Key::from_hex(bad));
    bad[5] = ' ';
    CHECK_FALSE(Key::from_hex(bad));
  }

  TEST_CASE("KeyHash spreads keys") {
    std::set<std::size_t> hashes;
    for (int i = 0; i < 1000; ++i) hashes.insert(kjit::cache::KeyHash{}(Hasher(1).field("i", std::uint64_t(i)).finish()));
    CHECK(hashes.size() == 1000);
  }

  // The documented encoding, built by hand: 'F' u64(label size) label type u64(value size) value,
  // integers little-endian. The key is XXH3-128 over all of it, so caches written by any kjit
  // with this key format stay valid whatever the Hasher does internally.
  TEST_CASE("the key is XXH3-128 of the documented field encoding, for random fields") {
    auto u64 = [](std::string& out, std::uint64_t v) {
      for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
    };
    auto encode = [&](std::string& out, std::string_view label, char type, std::string_view value) {
      out.push_back('F');
      u64(out, label.size());
      out.append(label);
      out.push_back(type);
      u64(out, value.size());
      out.append(value);
    };
    std::mt19937_64 rng(20261122);
    auto random_text = [&](std::size_t max) {
      std::string s(rng() % (max + 1), '\0');
      for (char& c : s) c = static_cast<char>(rng());
      return s;
    };
    for (int round = 0; round < 200; ++round) {
      const auto version = static_cast<std::uint32_t>(rng() % 5 + 1);
      Hasher h(version, round % 2 ? Hasher::Fields::keep : Hasher::Fields::drop);
      std::string bytes;
      std::string v8;
      u64(v8, version);
      encode(bytes, "key-format", 'u', v8);
      const int fields = static_cast<int>(rng() % 12);
      for (int f = 0; f < fields; ++f) {
        // Labels past 64 bytes and values past XXH3's internal buffer take other paths.
        const std::string label = random_text(rng() % 4 == 0 ? 200 : 20);
        if (rng() % 3 == 0) {
          const std::uint64_t n = rng();
          std::string nv;
          u64(nv, n);
          encode(bytes, label, 'u', nv);
          h.field(label, n);
        } else {
          const std::string value = random_text(rng() % 4 == 0 ? 5000 : 300);
          encode(bytes, label, 's', value);
          h.field(label, value);
        }
      }
      const kjit::system::Hash128 expect = kjit::system::xxh3_128(bytes.data(), bytes.size());
      const Key k = h.finish();
      Key want;
      for (int i = 0; i < 8; ++i) {
        want.bytes[i] = static_cast<std::uint8_t>(expect.high64 >> (56 - 8 * i));
        want.bytes[8 + i] = static_cast<std::uint8_t>(expect.low64 >> (56 - 8 * i));
      }
      REQUIRE(k == want);
    }
  }

  TEST_CASE("a fixed field list keeps its key across kjit versions") {
    // Pinned when the Hasher began streaming (2026-11-22): the same value as before.
    const Key k = Hasher(1).field("source", "__global__ void k() {}").field("option-count", std::uint64_t{2}).finish();
    CHECK(k.hex() == "b373677862582d6381eb3a7a85fd22f2");
  }
}
