#include "cache/hash.hpp"

#include <xxhash.h>

namespace kjit::cache {

Hash128 xxh3_128(const void* data, std::size_t size) noexcept {
  const XXH128_hash_t h = XXH3_128bits(data, size);
  return {h.low64, h.high64};
}

std::uint64_t xxh3_64(const void* data, std::size_t size) noexcept { return XXH3_64bits(data, size); }

}  // namespace kjit::cache
