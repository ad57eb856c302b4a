// kjit::request::RequestHash: a fast hash of a load request exactly as given (program, typed
// options, device) for the in-process registry, where a lookup must cost well under a
// microsecond. It hashes no files: the registry assumes on-disk headers do not change under a
// running process (the source loader's hot reload re-checks them). Never throws.
#pragma once

#include <kjit/compile_options.hpp>
#include <kjit/program.hpp>

#include <cstddef>
#include <cstdint>

namespace kjit::request {

struct RequestHash {
  std::uint64_t low = 0, high = 0;
  friend bool operator==(const RequestHash&, const RequestHash&) = default;
};

struct RequestHashHasher {
  std::size_t operator()(const RequestHash& h) const noexcept { return static_cast<std::size_t>(h.low ^ h.high); }
};

RequestHash request_hash(const Program& program, const CompileOptions& options, int device);

}  // namespace kjit::request
