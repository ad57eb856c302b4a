// kjit::request::RequestHash: a fast hash of a load request exactly as given (program, typed
// options, device) for the in-process registry, where a lookup must cost well under a
// microsecond. It hashes no files: the registry assumes on-disk headers do not change under a
// running process (the source loader's hot reload re-checks them). Never throws.
#pragma once

#include <kjit/compile_options.hpp>
#include <kjit/program.hpp>

#include "core/system/hash.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kjit::request {

struct RequestHash {
  std::uint64_t low = 0, high = 0;
  friend bool operator==(const RequestHash&, const RequestHash&) = default;
};

struct RequestHashHasher {
  std::size_t operator()(const RequestHash& h) const noexcept { return static_cast<std::size_t>(h.low ^ h.high); }
};

RequestHash request_hash(const Program& program, const CompileOptions& options, int device);

// Length-delimited fields ("ab"+"c" != "a"+"bc") streamed into XXH3-128 without copying: how a
// request hash is made (also load_inline's identity of a call).
class RequestHasher {
public:
  void bytes(const void* p, std::size_t n) {
    num(n);
    m_hash.update(p, n);
  }
  void str(std::string_view s) { bytes(s.data(), s.size()); }
  void num(std::uint64_t v) { m_hash.update(&v, sizeof v); }
  RequestHash finish() const {
    const system::Hash128 h = m_hash.digest();
    return {h.low64, h.high64};
  }

private:
  system::Hash128Stream m_hash;
};

}  // namespace kjit::request
