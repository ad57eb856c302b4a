#include "core/system/hash.hpp"

#include <xxhash.h>

namespace kjit::system {

Hash128 xxh3_128(const void* data, std::size_t size) noexcept {
  const XXH128_hash_t h = XXH3_128bits(data, size);
  return {h.low64, h.high64};
}

std::uint64_t xxh3_64(const void* data, std::size_t size) noexcept { return XXH3_64bits(data, size); }

namespace {
static_assert(sizeof(XXH3_state_t) <= 640 && alignof(XXH3_state_t) <= 64);
XXH3_state_t* state(unsigned char* storage) { return reinterpret_cast<XXH3_state_t*>(storage); }
const XXH3_state_t* state(const unsigned char* storage) { return reinterpret_cast<const XXH3_state_t*>(storage); }
}  // namespace

Hash128Stream::Hash128Stream() noexcept { XXH3_128bits_reset(state(m_state)); }

void Hash128Stream::update(const void* data, std::size_t size) noexcept {
  XXH3_128bits_update(state(m_state), data, size);
}

Hash128 Hash128Stream::digest() const noexcept {
  const XXH128_hash_t h = XXH3_128bits_digest(state(m_state));
  return {h.low64, h.high64};
}

}  // namespace kjit::system
