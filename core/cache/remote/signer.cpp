#include "core/cache/remote/signer.hpp"

#include "core/system/file_io.hpp"

#include <fmt/format.h>
#include <sodium.h>

#include <cstring>

#include <sys/stat.h>

namespace kjit::cache {
namespace {

constexpr std::string_view k_hmac_magic = "KJSG";
constexpr std::string_view k_ed25519_magic = "KJED";
constexpr std::string_view k_secret_prefix = "ed25519-secret:";
constexpr std::string_view k_public_prefix = "ed25519:";

static_assert(crypto_auth_hmacsha256_BYTES == Signer::k_tag_size);
static_assert(crypto_sign_BYTES == Signer::k_signature_size);
static_assert(crypto_sign_PUBLICKEYBYTES == Signer::k_public_key_size);
static_assert(crypto_sign_SEEDBYTES == Signer::k_seed_size);

void init_sodium() {
  static const int initialized = sodium_init();  // thread-safe, once, on first use
  (void)initialized;
}

std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && std::strchr(" \t\r\n", s.front()) != nullptr) s.remove_prefix(1);
  while (!s.empty() && std::strchr(" \t\r\n", s.back()) != nullptr) s.remove_suffix(1);
  return s;
}

// `size` bytes from exactly 2 * size hex digits, or nullopt.
std::optional<std::string> from_hex(std::string_view hex, std::size_t size) {
  if (hex.size() != 2 * size) return std::nullopt;
  std::string out(size, '\0');
  std::size_t written = 0;
  if (sodium_hex2bin(reinterpret_cast<unsigned char*>(out.data()), size, hex.data(), hex.size(), nullptr, &written,
                     nullptr) != 0 ||
      written != size) {
    return std::nullopt;
  }
  return out;
}

std::string to_hex(std::string_view bytes) {
  std::string out(bytes.size() * 2 + 1, '\0');
  sodium_bin2hex(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  out.pop_back();
  return out;
}

system::Result<std::string> read_seed(const std::string& path) {
  system::FileContent text = system::read_file(path, 4096);
  if (!text.ok()) return system::Failure{fmt::format("reading the ed25519 signing key {}: {}", path, text.why())};
  const std::string_view body = trim_blanks(text.bytes);
  std::optional<std::string> seed;
  if (body.starts_with(k_secret_prefix)) seed = from_hex(trim_blanks(body.substr(k_secret_prefix.size())), Signer::k_seed_size);
  sodium_memzero(text.bytes.data(), text.bytes.size());
  if (!seed) {
    return system::Failure{fmt::format("the ed25519 signing key {} is not one: expected one line \"ed25519-secret:\" and 64 hex "
                               "digits, as `kjit cache keygen` writes",
                               path)};
  }
  // A key, but one its group or others may read: refused, as ssh refuses such a private key.
  // Whoever can read it can sign code that every node of the fleet loads. (Standard input, a
  // pipe, is not a file others can open.)
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 077) != 0) {
    sodium_memzero(seed->data(), seed->size());
    const bool group = (st.st_mode & 070) != 0, others = (st.st_mode & 007) != 0;
    return system::Failure{fmt::format("the ed25519 signing key {} is not used: its mode {:04o} lets {} {} it, and "
                               "whoever reads it can sign code every node of the fleet loads (ssh refuses such a "
                               "key too); make it private: chmod 600 {}",
                               path, st.st_mode & 07777,
                               group && others ? "its group and others" : group ? "its group" : "others",
                               (st.st_mode & 044) != 0 ? "read" : "change", path)};
  }
  return std::move(*seed);
}

system::Result<std::vector<std::string>> read_public_keys(const std::string& path) {
  system::FileContent text = system::read_file(path, 1 << 20);
  if (!text.ok()) return system::Failure{fmt::format("reading the ed25519 public keys {}: {}", path, text.why())};
  std::vector<std::string> keys;
  std::string_view rest = text.bytes;
  for (int line = 1; !rest.empty(); ++line) {
    const std::size_t end = rest.find('\n');
    std::string_view l = trim_blanks(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (l.empty() || l.front() == '#') continue;
    // "ed25519:<64 hex> [comment]"
    const std::string_view word = l.substr(0, l.find_first_of(" \t"));
    std::optional<std::string> key;
    if (word.starts_with(k_public_prefix)) key = from_hex(word.substr(k_public_prefix.size()), Signer::k_public_key_size);
    if (!key) {
      return system::Failure{fmt::format("line {} of the ed25519 public keys {} is not a key: expected \"ed25519:\" and 64 hex "
                                 "digits (a comment may follow), one key a line, as `kjit cache keygen` writes",
                                 line, path)};
    }
    keys.push_back(std::move(*key));
  }
  if (keys.empty()) return system::Failure{fmt::format("the ed25519 public keys {} hold no key", path)};
  return keys;
}

}  // namespace

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

system::Result<Signer> Signer::ed25519_from_files(const std::string& signing_key_file, const std::string& public_key_file) {
  std::string seed;
  std::vector<std::string> keys;
  if (!signing_key_file.empty()) {
    auto s = read_seed(signing_key_file);
    if (!s) return s.error();
    seed = std::move(*s);
  }
  if (!public_key_file.empty()) {
    auto k = read_public_keys(public_key_file);
    if (!k) return k.error();
    keys = std::move(*k);
  }
  Signer out = ed25519(seed, std::move(keys));
  sodium_memzero(seed.data(), seed.size());
  return out;
}

system::Result<std::optional<Signer>> Signer::from_files(const std::string& secret_file, const std::string& signing_key_file,
                                                 const std::string& public_key_file) {
  const bool ed = !signing_key_file.empty() || !public_key_file.empty();
  if (ed && !secret_file.empty()) {
    return system::Failure{fmt::format("both a fleet secret (KJIT_REMOTE_SECRET_FILE={}) and an ed25519 key "
                               "(KJIT_REMOTE_SIGNING_KEY_FILE or KJIT_REMOTE_PUBLIC_KEY_FILE) are set: a fleet signs "
                               "one way; unset one of them",
                               secret_file)};
  }
  if (ed) {
    auto s = ed25519_from_files(signing_key_file, public_key_file);
    if (!s) return s.error();
    return std::optional<Signer>(std::move(*s));
  }
  if (!secret_file.empty()) {
    auto s = from_file(secret_file);
    if (!s) return s.error();
    return std::optional<Signer>(std::move(*s));
  }
  return std::optional<Signer>();
}

Signer::Signer(std::string secret) : m_secret(std::move(secret)) {}

Signer Signer::ed25519(std::string_view seed, std::vector<std::string> public_keys) {
  init_sodium();
  Signer s;
  s.m_scheme = Scheme::ed25519;
  s.m_public_keys = std::move(public_keys);
  if (seed.size() == k_seed_size) {
    s.m_seed = std::string(seed);
    std::string pk(k_public_key_size, '\0');
    s.m_secret_key.assign(crypto_sign_SECRETKEYBYTES, '\0');
    crypto_sign_seed_keypair(reinterpret_cast<unsigned char*>(pk.data()),
                             reinterpret_cast<unsigned char*>(s.m_secret_key.data()),
                             reinterpret_cast<const unsigned char*>(s.m_seed.data()));
    s.m_public_keys.push_back(std::move(pk));
  }
  return s;
}

Signer::KeyPair Signer::generate_ed25519() {
  init_sodium();
  std::string seed(k_seed_size, '\0');
  randombytes_buf(seed.data(), seed.size());
  const Signer s = ed25519(seed, {});
  KeyPair out{fmt::format("{}{}\n", k_secret_prefix, to_hex(seed)),
              fmt::format("{}{}\n", k_public_prefix, to_hex(s.m_public_keys.back()))};
  sodium_memzero(seed.data(), seed.size());
  return out;
}

std::string_view Signer::scheme_name() const { return m_scheme == Scheme::ed25519 ? "ed25519" : "hmac-sha256"; }

std::string_view Signer::variable() const {
  return m_scheme == Scheme::ed25519 ? "KJIT_REMOTE_PUBLIC_KEY_FILE" : "KJIT_REMOTE_SECRET_FILE";
}

std::string Signer::sign(std::string_view bytes) const {
  init_sodium();
  if (m_scheme == Scheme::ed25519) {
    if (m_secret_key.empty()) return {};
    std::string out(k_signature_size, '\0');
    crypto_sign_detached(reinterpret_cast<unsigned char*>(out.data()), nullptr,
                         reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                         reinterpret_cast<const unsigned char*>(m_secret_key.data()));
    return out;
  }
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, reinterpret_cast<const unsigned char*>(m_secret.data()), m_secret.size());
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  std::string out(k_tag_size, '\0');
  crypto_auth_hmacsha256_final(&state, reinterpret_cast<unsigned char*>(out.data()));
  sodium_memzero(&state, sizeof state);
  return out;
}

bool Signer::verify(std::string_view signature, std::string_view bytes) const {
  init_sodium();
  if (m_scheme == Scheme::ed25519) {
    if (signature.size() != k_signature_size) return false;
    for (const std::string& pk : m_public_keys) {
      if (crypto_sign_verify_detached(reinterpret_cast<const unsigned char*>(signature.data()),
                                      reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                                      reinterpret_cast<const unsigned char*>(pk.data())) == 0) {
        return true;
      }
    }
    return false;
  }
  if (signature.size() != k_tag_size) return false;
  const std::string expected = sign(bytes);
  return sodium_memcmp(expected.data(), signature.data(), k_tag_size) == 0;
}

const std::vector<std::string_view>& signed_value_magics() {
  static const std::vector<std::string_view> magics{k_hmac_magic, k_ed25519_magic};
  return magics;
}

bool is_signed_value(std::string_view value) {
  const std::string_view magic = value.substr(0, 4);
  return magic == k_hmac_magic || magic == k_ed25519_magic;
}

std::string seal_value(const Signer* signer, std::string entry) {
  if (signer == nullptr || !signer->can_sign()) return entry;
  const std::string signature = signer->sign(entry);
  std::string out;
  out.reserve(4 + signature.size() + entry.size());
  out += signer->scheme() == Signer::Scheme::ed25519 ? k_ed25519_magic : k_hmac_magic;
  out += signature;
  out += entry;
  return out;
}

system::Result<std::size_t> open_value(const Signer* signer, std::string_view value) {
  const std::string_view magic = value.substr(0, 4);
  const bool hmac = magic == k_hmac_magic, ed = magic == k_ed25519_magic;
  if (signer == nullptr) {
    if (hmac || ed) {
      return system::Failure{fmt::format("it is signed ({}), and this process has no {} to check it with (set {})",
                                 ed ? "ed25519" : "HMAC", ed ? "public key" : "secret",
                                 ed ? "KJIT_REMOTE_PUBLIC_KEY_FILE" : "KJIT_REMOTE_SECRET_FILE")};
    }
    return std::size_t{0};
  }
  const bool want_ed = signer->scheme() == Signer::Scheme::ed25519;
  if (!hmac && !ed) {
    return system::Failure{fmt::format("it carries no signature, and this process requires one ({})", signer->variable())};
  }
  if (ed != want_ed) {
    return system::Failure{want_ed ? std::string("it is signed with a fleet secret (HMAC), and this process accepts only "
                                         "ed25519 signatures (KJIT_REMOTE_PUBLIC_KEY_FILE)")
                           : std::string("it is signed with ed25519, and this process checks HMAC tags of the fleet "
                                         "secret (KJIT_REMOTE_SECRET_FILE)")};
  }
  const std::size_t head = 4 + (ed ? Signer::k_signature_size : Signer::k_tag_size);
  if (value.size() < head) return system::Failure{"truncated signature"};
  if (!signer->verify(value.substr(4, head - 4), value.substr(head))) {
    return system::Failure{ed ? std::string("its ed25519 signature is not valid for any of this node's public keys (damaged, "
                                    "forged, or signed with a key not listed in KJIT_REMOTE_PUBLIC_KEY_FILE)")
                      : std::string("its signature is not valid for this fleet's secret (damaged, or written by "
                                    "someone without it)")};
  }
  return head;
}

}  // namespace kjit::cache
