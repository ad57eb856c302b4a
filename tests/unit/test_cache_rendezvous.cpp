// kjit::cache::rendezvous_shard: ccache's weighted rendezvous hashing, as docs/fleet.md spells
// it, over random keys: the documented score, shares that follow the weights, and a fifth shard
// that takes about a fifth of the keys, all of them from the others and none between them.
#include "core/cache/remote/rendezvous.hpp"

#include "core/system/hash.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace kjit::cache;

namespace {

std::vector<Key> random_keys(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Key> keys(n);
  for (Key& k : keys) {
    for (auto& b : k.bytes) b = static_cast<std::uint8_t>(rng());
  }
  return keys;
}

std::uint64_t seed() {
  const std::uint64_t s = std::random_device{}();
  MESSAGE("seed ", s);
  return s;
}

}  // namespace

TEST_SUITE("Rendezvous") {
  TEST_CASE("the score is weight over minus ln of u from XXH3-64 of the key's hex and the shard's name") {
    for (const Key& key : random_keys(100, seed())) {
      for (const char* name : {"redis://a:6379", "unix:///run/redis.sock", ""}) {
        const std::string text = key.hex() + name;
        const std::uint64_t h = kjit::system::xxh3_64(text.data(), text.size());
        const double u = static_cast<double>(h & ((1ull << 53) - 1)) / 9007199254740992.0;
        CHECK(rendezvous_score(key, name, 2.5) == doctest::Approx(2.5 / -std::log(u)).epsilon(1e-12));
      }
    }
    const std::string long_name(500, 'n');  // past the stack buffer
    const Key key = random_keys(1, seed())[0];
    const std::string text = key.hex() + long_name;
    const double u = static_cast<double>(kjit::system::xxh3_64(text.data(), text.size()) & ((1ull << 53) - 1)) / 9007199254740992.0;
    CHECK(rendezvous_score(key, long_name, 1) == doctest::Approx(1 / -std::log(u)).epsilon(1e-12));
  }

  TEST_CASE("a fifth shard moves about a fifth of the keys and each moved key moves to it") {
    const std::vector<Key> keys = random_keys(20000, seed());
    const std::array<RendezvousShard, 5> five{{{"redis://a", 1}, {"redis://b", 1}, {"redis://c", 1},
                                               {"unix:///d.sock", 1}, {"redis://e:7000", 1}}};
    const std::span<const RendezvousShard> four(five.data(), 4);
    std::size_t moved = 0, moved_elsewhere = 0;
    std::array<std::size_t, 4> per_shard{};
    for (const Key& k : keys) {
      const std::size_t before = rendezvous_shard(k, four), after = rendezvous_shard(k, five);
      ++per_shard[before];
      if (before != after) {
        ++moved;
        moved_elsewhere += after != 4;
      }
    }
    const double fraction = static_cast<double>(moved) / keys.size();
    MESSAGE("moved ", fraction);
    CHECK(std::abs(fraction - 0.2) <= 0.02);
    CHECK(moved_elsewhere == 0);
    for (std::size_t n : per_shard) CHECK(std::abs(static_cast<double>(n) / keys.size() - 0.25) <= 0.02);
  }

  TEST_CASE("shares follow the weights and removing a shard moves only its own keys") {
    const std::vector<Key> keys = random_keys(20000, seed());
    const std::array<RendezvousShard, 4> shards{{{"redis://a", 1}, {"redis://b", 2}, {"redis://c", 1}, {"redis://d", 4}}};
    const std::array<RendezvousShard, 3> without_c{{shards[0], shards[1], shards[3]}};
    const std::array<std::size_t, 4> to_without_c{0, 1, 9, 2};
    std::array<std::size_t, 4> count{};
    for (const Key& k : keys) {
      const std::size_t i = rendezvous_shard(k, shards);
      ++count[i];
      if (i != 2) CHECK(rendezvous_shard(k, without_c) == to_without_c[i]);  // stays where it was
    }
    const double total = 8;
    for (std::size_t i = 0; i < shards.size(); ++i) {
      CHECK(std::abs(static_cast<double>(count[i]) / keys.size() - shards[i].weight / total) <= 0.02);
    }
  }

  TEST_CASE("the choice is the list's alone: the same key picks the same shard in any process and order") {
    const std::array<RendezvousShard, 3> abc{{{"redis://a", 1}, {"redis://b", 1}, {"redis://c", 1}}};
    const std::array<RendezvousShard, 3> cab{{abc[2], abc[0], abc[1]}};
    for (const Key& k : random_keys(1000, seed())) {
      CHECK(abc[rendezvous_shard(k, abc)].name == cab[rendezvous_shard(k, cab)].name);
    }
    const std::array<RendezvousShard, 1> one{{{"redis://a", 1}}};
    CHECK(rendezvous_shard(random_keys(1, 1)[0], one) == 0);
  }
}
