#include "core/cache/entry.hpp"

#include <doctest/doctest.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <random>

using namespace kjit::cache;
using namespace kjit::system;

namespace {

Entry random_entry(std::mt19937_64& rng) {
  Entry e;
  const int n = static_cast<int>(rng() % 6);
  for (int i = 0; i < n; ++i) {
    std::string bytes(rng() % 300, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    e.sections.emplace_back(static_cast<SectionKind>(1 + rng() % 5), std::move(bytes));
  }
  return e;
}

Entry sample_entry() {
  Entry e;
  e.set(SectionKind::cubin, std::string("\x7f" "ELF\0\0binary\xff\x00", 14));
  e.set(SectionKind::ptx, ".version 8.4\n.target sm_90\n");
  e.set(SectionKind::log, "");
  e.set(SectionKind::lowered_names, "scale<float>\t_Z5scaleIfEvPT_\n");
  e.set(SectionKind::meta, "{\"arch\":\"sm_90\"}");
  return e;
}

// Rewrites the checksum so that only the other defects remain.
void reseal(std::string& bytes) {
  const std::size_t body = bytes.size() - 16;
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), body);
  for (int i = 0; i < 8; ++i) {
    bytes[body + i] = static_cast<char>(h.high64 >> (56 - 8 * i));
    bytes[body + 8 + i] = static_cast<char>(h.low64 >> (56 - 8 * i));
  }
}

bool same(const Entry& a, const Entry& b) { return a.sections == b.sections; }

Key random_key(std::mt19937_64& rng) {
  Key k;
  for (auto& b : k.bytes) b = static_cast<std::uint8_t>(rng());
  return k;
}

const Key k_sample_key = *Key::from_hex("0123456789abcdef0123456789abcdef");

}  // namespace

TEST_SUITE("Entry") {
  TEST_CASE("find and set") {
    Entry e;
    CHECK(e.find(SectionKind::ptx) == nullptr);
    e.set(SectionKind::ptx, "a");
    e.set(SectionKind::cubin, "b");
    e.set(SectionKind::ptx, "c");
    REQUIRE(e.find(SectionKind::ptx));
    CHECK(*e.find(SectionKind::ptx) == "c");
    CHECK(e.sections.size() == 2);
  }

  TEST_CASE("serialize then parse gives back the entry, for random contents") {
    std::mt19937_64 rng(12345);
    for (int round = 0; round < 300; ++round) {
      const Entry e = random_entry(rng);
      const Key key = random_key(rng);
      const ParseResult r = parse(serialize(key, e));
      REQUIRE_MESSAGE(r.entry, r.error);
      CHECK(r.error.empty());
      CHECK(same(*r.entry, e));
      CHECK(r.key == key);  // the key it was stored under travels with it
      CHECK(parse_in_place(serialize(key, e)).key == key);
    }
  }

  TEST_CASE("an entry with no sections round-trips") {
    const ParseResult r = parse(serialize(k_sample_key, Entry{}));
    REQUIRE(r.entry);
    CHECK(r.entry->sections.empty());
  }

  TEST_CASE("a flip of any bit at any byte position is refused") {
    const std::string good = serialize(k_sample_key, sample_entry());
    REQUIRE(parse(good).entry);
    int refused = 0;
    for (std::size_t pos = 0; pos < good.size(); ++pos) {
      for (int bit = 0; bit < 8; ++bit) {
        std::string bad = good;
        bad[pos] = static_cast<char>(bad[pos] ^ (1 << bit));
        const ParseResult r = parse(bad);
        CHECK_MESSAGE(!r.entry, "bit ", bit, " of byte ", pos, " flipped was accepted");
        CHECK(!r.error.empty());
        refused += !r.entry;
      }
    }
    CHECK(refused == static_cast<int>(good.size() * 8));
  }

  TEST_CASE("every truncation is refused") {
    const std::string good = serialize(k_sample_key, sample_entry());
    for (std::size_t len = 0; len < good.size(); ++len) {
      const ParseResult r = parse(std::string_view(good).substr(0, len));
      CHECK_MESSAGE(!r.entry, "truncated to ", len, " bytes was accepted");
    }
  }

  TEST_CASE("zero length is refused as empty") {
    const ParseResult r = parse("");
    CHECK(!r.entry);
    CHECK(r.error == "empty file");
  }

  TEST_CASE("a wrong magic is refused") {
    std::string bad = serialize(k_sample_key, sample_entry());
    bad[0] = 'X';
    reseal(bad);
    const ParseResult r = parse(bad);
    CHECK(!r.entry);
    CHECK(r.error.find("magic") != std::string::npos);
  }

  TEST_CASE("another format version is refused even with a valid checksum") {
    std::string bad = serialize(k_sample_key, sample_entry());
    bad[4] = static_cast<char>(k_entry_format_version + 1);
    reseal(bad);
    const ParseResult r = parse(bad);
    CHECK(!r.entry);
    CHECK(r.error.find("unsupported format version " + std::to_string(k_entry_format_version + 1)) !=
          std::string::npos);
  }

  TEST_CASE("trailing garbage is refused") {
    const std::string good = serialize(k_sample_key, sample_entry());
    for (std::string extra : {std::string(1, '\0'), std::string("garbage"), std::string(4096, 'x')}) {
      const ParseResult r = parse(good + extra);
      CHECK(!r.entry);
      CHECK(r.error.find("trailing") != std::string::npos);
    }
  }

  TEST_CASE("structural lies under a valid checksum are refused") {
    const std::string good = serialize(k_sample_key, sample_entry());
    SUBCASE("unknown section kind") {
      std::string bad = good;
      bad[32] = 9;  // kind of the first section (after the 32-byte header)
      reseal(bad);
      CHECK(parse(bad).error.find("unknown kind") != std::string::npos);
    }
    SUBCASE("section size past the end") {
      std::string bad = good;
      bad[34 + 7] = '\x7f';  // high byte of the first section's size
      reseal(bad);
      CHECK(!parse(bad).entry);
    }
    SUBCASE("more sections announced than present") {
      std::string bad = good;
      bad[6] = 6;
      reseal(bad);
      CHECK(!parse(bad).entry);
    }
    SUBCASE("fewer sections announced than present") {
      std::string bad = good;
      bad[6] = 4;
      reseal(bad);
      CHECK(parse(bad).error.find("unaccounted") != std::string::npos);
    }
    SUBCASE("payload size of 2^64 - 1") {
      std::string bad = good;
      for (int i = 8; i < 16; ++i) bad[i] = '\xff';
      reseal(bad);
      CHECK(parse(bad).error.find("truncated") != std::string::npos);
    }
  }

  TEST_CASE("random garbage never parses and never crashes") {
    std::mt19937_64 rng(7);
    for (int round = 0; round < 2000; ++round) {
      std::string bytes(rng() % 200, '\0');
      for (char& c : bytes) c = static_cast<char>(rng());
      if (round % 2 == 0 && bytes.size() >= 4) bytes.replace(0, 4, "KJIT");
      CHECK(!parse(bytes).entry);
    }
  }
}
