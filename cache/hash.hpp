// kjit::cache::xxh3_128 and xxh3_64: the one place xxHash is compiled into libkjit. xxHash is
// inlined (XXH_INLINE_ALL) so that binaries carry it; every user calls these two functions
// instead of including xxhash.h, so that the key, the entry checksum and the request hash run
// one copy of the code: a fresh process's first request runs it cold, once.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kjit::cache {

struct Hash128 {
  std::uint64_t low64 = 0;
  std::uint64_t high64 = 0;
};

Hash128 xxh3_128(const void* data, std::size_t size) noexcept;
std::uint64_t xxh3_64(const void* data, std::size_t size) noexcept;

}  // namespace kjit::cache
