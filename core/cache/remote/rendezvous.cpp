#include "core/cache/remote/rendezvous.hpp"

#include "core/system/hash.hpp"

#include <cmath>
#include <cstring>
#include <string>

namespace kjit::cache {

double rendezvous_score(const Key& key, std::string_view name, double weight) noexcept {
  static constexpr char digits[] = "0123456789abcdef";
  char stack[32 + 200];
  std::string heap;
  char* text = stack;
  if (name.size() > sizeof(stack) - 32) {
    heap.resize(32 + name.size());
    text = heap.data();
  }
  for (std::size_t i = 0; i < key.bytes.size(); ++i) {
    text[2 * i] = digits[key.bytes[i] >> 4];
    text[2 * i + 1] = digits[key.bytes[i] & 15];
  }
  if (!name.empty()) std::memcpy(text + 32, name.data(), name.size());
  const std::uint64_t h = system::xxh3_64(text, 32 + name.size());
  constexpr std::uint64_t k_denominator = 1ull << 53;  // a double's significand: u is exact
  const double u = static_cast<double>(h & (k_denominator - 1)) / static_cast<double>(k_denominator);
  return u == 0.0 ? 0.0 : weight / -std::log(u);
}

std::size_t rendezvous_shard(const Key& key, std::span<const RendezvousShard> shards) noexcept {
  if (shards.size() <= 1) return 0;
  std::size_t best = 0;
  double best_score = -1;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const double score = rendezvous_score(key, shards[i].name, shards[i].weight);
    if (score > best_score) {
      best = i;
      best_score = score;
    }
  }
  return best;
}

}  // namespace kjit::cache
