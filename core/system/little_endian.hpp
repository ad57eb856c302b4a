// kjit::system::put_le / get_le: integers as little-endian bytes, the byte order of kjit's file
// formats (cache entries, warm bundles). Pure; nothing here throws but put_le's append.
#pragma once

#include <cstdint>
#include <string>

namespace kjit::system {

// Appends the low `bytes` bytes of v to out, least significant first.
inline void put_le(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

// The `bytes`-byte little-endian integer at p.
inline std::uint64_t get_le(const char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= std::uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

}  // namespace kjit::system
