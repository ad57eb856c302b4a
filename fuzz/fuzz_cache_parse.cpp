// libFuzzer target for kjit::cache::parse: it must never crash, read out of bounds or accept
// bytes that do not re-serialize to themselves.
#include "core/cache/entry.hpp"

#include <xxhash.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

void check(std::string_view bytes) {
  const kjit::cache::ParseResult r = kjit::cache::parse(bytes);
  if (r.entry) {
    // Accepted: it must be exactly the encoding of what was parsed.
    if (!r.error.empty() || kjit::cache::serialize(r.key, *r.entry) != bytes) std::abort();
  } else if (r.error.empty()) {
    std::abort();  // a refusal always says why
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  check(bytes);
  // Random bytes almost never carry a valid checksum, which would leave the section walk
  // behind it unexplored: check the input once more with its last 16 bytes made the checksum.
  if (size >= 32) {
    std::string sealed(bytes);
    const XXH128_hash_t h = XXH3_128bits(sealed.data(), size - 16);
    for (int i = 0; i < 8; ++i) {
      sealed[size - 16 + i] = static_cast<char>(h.high64 >> (56 - 8 * i));
      sealed[size - 8 + i] = static_cast<char>(h.low64 >> (56 - 8 * i));
    }
    check(sealed);
  }
  return 0;
}
