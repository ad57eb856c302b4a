// kjit::cache::Key and kjit::cache::Hasher: a 128-bit content key (XXH3-128) and the hasher
// that builds it from typed, delimited fields, starting with a key-format version, so that
// "-I -O2" and "-I-O2" differ and a format change misses cleanly. Nothing here throws.
#pragma once

#include "core/system/tools_api.hpp"
#include "core/system/hash.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::cache {

struct Key {
  std::array<std::uint8_t, 16> bytes{};

  // 32 lowercase hex digits.
  KJIT_TOOLS_API std::string hex() const;
  // Parses 32 hex digits; nullopt for anything else.
  KJIT_TOOLS_API static std::optional<Key> from_hex(std::string_view hex);

  friend bool operator==(const Key&, const Key&) = default;
};

struct KeyHash {
  std::size_t operator()(const Key& k) const noexcept;
};

// One field as it went into the key, for `kjit cache explain` and the debug dump.
struct KeyField {
  std::string label;
  std::string value;  // the value, or "<N bytes, xxh3 HEX>" for long contents
};

class Hasher {
public:
  // Whether fields() records what was fed (for explain): the request path skips it.
  enum class Fields { keep, drop };
  explicit Hasher(std::uint32_t key_format_version, Fields fields = Fields::keep);

  // Feeds a typed delimiter (label and length) and then the value.
  Hasher& field(std::string_view label, std::string_view value);
  Hasher& field(std::string_view label, std::uint64_t value);

  Key finish() const;
  const std::vector<KeyField>& fields() const { return m_fields; }
  // Every field as "label: value" lines, then "key: HEX": what `kjit cache explain` prints and
  // what the debug mode writes to a file, so that two such texts diff to the cause of a miss.
  std::string describe() const;

private:
  void feed_header(std::string_view label, char type, std::uint64_t size);

  system::Hash128Stream m_hash;  // everything fed so far (delimiters included), streamed: nothing copied
  std::vector<KeyField> m_fields;
  bool m_keep_fields = true;
};

}  // namespace kjit::cache
