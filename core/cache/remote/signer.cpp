#include "core/cache/remote/signer.hpp"

#include "core/system/file_io.hpp"

#include <fmt/format.h>
#include <sodium.h>

#include <cstring>

namespace kjit::cache {

system::Result<Signer> Signer::from_file(const std::string& path) {
  system::FileContent text = system::read_file(path);
  if (!text.ok()) return system::Failure{fmt::format("reading the remote cache secret {}: {}", path, text.why())};
  std::string secret = std::move(text.bytes);
  while (!secret.empty() && std::strchr(" \t\r\n", secret.back()) != nullptr) secret.pop_back();
  if (secret.empty()) {
    return system::Failure{fmt::format("the remote cache secret {} is empty (write a long random string into it, for "
                               "instance: head -c 32 /dev/urandom | base64 > {})",
                               path, path)};
  }
  return Signer(std::move(secret));
}

Signer::Signer(std::string secret) : m_secret(std::move(secret)) {}

std::string Signer::tag(std::string_view bytes) const {
  static const int initialized = sodium_init();  // thread-safe, once, on first use
  (void)initialized;
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, reinterpret_cast<const unsigned char*>(m_secret.data()), m_secret.size());
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  std::string out(crypto_auth_hmacsha256_BYTES, '\0');
  crypto_auth_hmacsha256_final(&state, reinterpret_cast<unsigned char*>(out.data()));
  sodium_memzero(&state, sizeof state);
  return out;
}

bool Signer::verify(std::string_view tag, std::string_view bytes) const {
  if (tag.size() != k_tag_size) return false;
  const std::string expected = this->tag(bytes);
  return sodium_memcmp(expected.data(), tag.data(), k_tag_size) == 0;
}

}  // namespace kjit::cache
