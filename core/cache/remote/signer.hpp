// kjit::cache::Signer: what a fleet signs its remote values and warm bundles with, and checks
// them by (libsodium). A value in a remote cache, or an entry in a bundle, is executable code that
// anyone with write access to the server or the file could have put there; with a key, kjit signs
// what it sends and loads only what carries a valid signature. Two schemes:
//   - HMAC-SHA256 with the fleet secret (KJIT_REMOTE_SECRET_FILE): every node signs and checks.
//   - ed25519 (KJIT_REMOTE_SIGNING_KEY_FILE, KJIT_REMOTE_PUBLIC_KEY_FILE): CI holds the signing
//     key; nodes hold only public keys (a file of one or more lines, for key rotation), check, and
//     cannot sign: their remote tier reads and never writes nor locks (RemoteTier::open).
// A remote value is "KJSG" + 32-byte HMAC tag + entry, "KJED" + 64-byte ed25519 signature + entry,
// or, with no key anywhere, the entry itself (seal_value, open_value). The signature covers the
// whole entry, and the entry records its key, so a signed value cannot be moved under another
// key either. Key files (docs/bundles.md): "ed25519-secret:<64 hex>" (the seed) and
// "ed25519:<64 hex> [comment]" lines. Nothing here throws.
#pragma once

#include "core/system/tools_api.hpp"
#include "core/system/result.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::cache {

class Signer {
public:
  enum class Scheme { hmac_sha256, ed25519 };
  static constexpr std::size_t k_tag_size = 32;         // HMAC-SHA256
  static constexpr std::size_t k_signature_size = 64;   // ed25519
  static constexpr std::size_t k_public_key_size = 32;  // ed25519
  static constexpr std::size_t k_seed_size = 32;        // ed25519: the secret key file holds this

  // The HMAC secret in `path` (trailing whitespace ignored). A Failure says why it cannot be used
  // (missing, unreadable, empty).
  static system::Result<Signer> from_file(const std::string& path);
  // ed25519: the signing key in `signing_key_file` (it signs, and checks with its own public key)
  // and/or the public keys in `public_key_file` (checks only); an empty name is not given. A
  // signing key file its group or others may read (0640, 0644) is refused, as ssh refuses such a
  // key: the Failure names the file, its mode and the chmod that fixes it.
  static system::Result<Signer> ed25519_from_files(const std::string& signing_key_file, const std::string& public_key_file);
  // kjit's three key variables read as one: nullopt when none is given; a Failure when a file
  // cannot be used or the fleet secret and an ed25519 key are both given (one scheme a fleet).
  KJIT_TOOLS_API static system::Result<std::optional<Signer>> from_files(const std::string& secret_file, const std::string& signing_key_file,
                                                  const std::string& public_key_file);

  explicit Signer(std::string secret);  // HMAC-SHA256
  // ed25519 from a seed (k_seed_size bytes; empty: verify only) and public keys
  // (k_public_key_size bytes each); the seed's own public key is added to them.
  static Signer ed25519(std::string_view seed, std::vector<std::string> public_keys);

  // A new ed25519 key pair: the signing key file's text and the public key file's line.
  struct KeyPair {
    std::string secret_text;  // "ed25519-secret:<64 hex>\n"
    std::string public_text;  // "ed25519:<64 hex>\n"
  };
  KJIT_TOOLS_API static KeyPair generate_ed25519();

  Scheme scheme() const { return m_scheme; }
  // "hmac-sha256" or "ed25519".
  std::string_view scheme_name() const;
  // Whether it holds a key to sign with (a node with public keys only does not).
  bool can_sign() const { return m_scheme == Scheme::hmac_sha256 || !m_seed.empty(); }
  // The HMAC tag (k_tag_size) or ed25519 signature (k_signature_size) of `bytes`; empty when it
  // cannot sign.
  KJIT_TOOLS_API std::string sign(std::string_view bytes) const;
  // Whether `signature` is valid for `bytes`: the HMAC tag (constant time), or an ed25519
  // signature by any of the public keys.
  KJIT_TOOLS_API bool verify(std::string_view signature, std::string_view bytes) const;
  // The variable a user sets to check what this scheme signs ("KJIT_REMOTE_SECRET_FILE").
  KJIT_TOOLS_API std::string_view variable() const;

private:
  Signer() = default;

  Scheme m_scheme = Scheme::hmac_sha256;
  std::string m_secret;                    // HMAC
  std::string m_seed;                      // ed25519: k_seed_size bytes, or empty
  std::string m_secret_key;                // ed25519: libsodium's 64-byte secret key, from the seed
  std::vector<std::string> m_public_keys;  // ed25519
};

// The most bytes a signature adds before a remote value's entry ("KJED" + 64).
inline constexpr std::size_t k_max_value_head = 4 + Signer::k_signature_size;

// The magics a signed remote value starts with ("KJSG": HMAC, "KJED": ed25519).
const std::vector<std::string_view>& signed_value_magics();
// Whether `value` carries a signature (of either scheme, valid or not).
bool is_signed_value(std::string_view value);

// The remote value of `entry`: signed with `signer` when there is one, else the entry itself.
std::string seal_value(const Signer* signer, std::string entry);
// Where the entry starts in `value` (0: unsigned), or why the value is not loaded: unsigned
// where a signature is required, signed where there is no key to check it, signed with the
// other scheme, or a signature that is not valid.
system::Result<std::size_t> open_value(const Signer* signer, std::string_view value);

}  // namespace kjit::cache
