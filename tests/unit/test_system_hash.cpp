#include "core/system/hash.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <doctest/doctest.h>

#include <random>
#include <string>

using kjit::system::Hash128;
using kjit::system::Hash128Stream;

namespace {

std::string random_bytes(std::mt19937_64& rng, std::size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

}  // namespace

TEST_SUITE("hash") {
  TEST_CASE("xxh3_128 and xxh3_64 are xxHash's XXH3 (known answers and the library itself)") {
    CHECK(kjit::system::xxh3_64("", 0) == 0x2D06800538D394C2ull);
    std::mt19937_64 rng(20261121);
    for (std::size_t n : {0, 1, 3, 16, 17, 128, 129, 240, 241, 1000, 4096, 100000}) {
      const std::string s = random_bytes(rng, n);
      const Hash128 mine = kjit::system::xxh3_128(s.data(), s.size());
      const XXH128_hash_t ref = XXH3_128bits(s.data(), s.size());
      CHECK(mine.low64 == ref.low64);
      CHECK(mine.high64 == ref.high64);
      CHECK(kjit::system::xxh3_64(s.data(), s.size()) == XXH3_64bits(s.data(), s.size()));
    }
  }

  TEST_CASE("Hash128Stream over pieces equals xxh3_128 over their concatenation") {
    std::mt19937_64 rng(7);
    for (int round = 0; round < 200; ++round) {
      const std::string s = random_bytes(rng, rng() % 5000);
      Hash128Stream stream;
      std::size_t pos = 0;
      while (pos < s.size()) {
        const std::size_t piece = std::min<std::size_t>(s.size() - pos, rng() % 700);
        stream.update(s.data() + pos, piece);
        pos += piece;
      }
      const Hash128 whole = kjit::system::xxh3_128(s.data(), s.size());
      const Hash128 streamed = stream.digest();
      CHECK(streamed.low64 == whole.low64);
      CHECK(streamed.high64 == whole.high64);
    }
  }
}
