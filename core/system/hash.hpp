// kjit::system::xxh3_128, xxh3_64 and Hash128Stream: the one place xxHash is compiled into
// libkjit. xxHash is inlined (XXH_INLINE_ALL) so that binaries carry it; every user calls these
// instead of including xxhash.h, so that the key and the entry checksum run one copy of the
// code: a fresh process's first request runs it cold, once.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kjit::system {

struct Hash128 {
  std::uint64_t low64 = 0;
  std::uint64_t high64 = 0;
};

Hash128 xxh3_128(const void* data, std::size_t size) noexcept;
std::uint64_t xxh3_64(const void* data, std::size_t size) noexcept;

// XXH3-128 over bytes fed piece by piece (the same value as xxh3_128 over their concatenation),
// without copying them: the registry's request hash, which a repeated load computes every time.
class Hash128Stream {
public:
  Hash128Stream() noexcept;
  void update(const void* data, std::size_t size) noexcept;
  Hash128 digest() const noexcept;

private:
  alignas(64) unsigned char m_state[640];  // an XXH3_state_t (hash.cpp checks that it fits)
};

}  // namespace kjit::system
