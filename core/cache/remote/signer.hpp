// kjit::cache::Signer: the fleet secret's HMAC-SHA256 (libsodium) over a remote value. A value
// in a remote cache is executable code that anyone with write access to the server could have
// put there; with a secret, kjit signs what it sends and loads only what carries a valid tag.
// The tag covers the whole entry, and the entry records its key, so a signed value cannot be
// moved under another key either. Nothing here throws.
#pragma once

#include "core/system/result.hpp"

#include <string>
#include <string_view>

namespace kjit::cache {

class Signer {
public:
  static constexpr std::size_t k_tag_size = 32;

  // The secret in `path` (trailing whitespace ignored). A Failure says why it cannot be used
  // (missing, unreadable, empty).
  static system::Result<Signer> from_file(const std::string& path);
  explicit Signer(std::string secret);

  std::string tag(std::string_view bytes) const;                       // k_tag_size bytes
  bool verify(std::string_view tag, std::string_view bytes) const;    // constant time

private:
  std::string m_secret;
};

}  // namespace kjit::cache
