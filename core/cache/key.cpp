#include "core/cache/key.hpp"

#include "core/system/hash.hpp"

#include <fmt/format.h>

#include <cstring>

namespace kjit::cache {

namespace {

constexpr char k_hex_digits[] = "0123456789abcdef";

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Values up to this many bytes appear verbatim in fields(); longer ones as size and digest.
constexpr std::size_t k_max_shown_value = 160;

// Little-endian u64 at `out`.
void put_u64(unsigned char* out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}

bool printable(std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

}  // namespace

std::string Key::hex() const {
  std::string out(32, '0');
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    out[2 * i] = k_hex_digits[bytes[i] >> 4];
    out[2 * i + 1] = k_hex_digits[bytes[i] & 0xf];
  }
  return out;
}

std::optional<Key> Key::from_hex(std::string_view hex) {
  if (hex.size() != 32) return std::nullopt;
  Key key;
  for (std::size_t i = 0; i < key.bytes.size(); ++i) {
    const int hi = hex_value(hex[2 * i]);
    const int lo = hex_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    key.bytes[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return key;
}

std::size_t KeyHash::operator()(const Key& k) const noexcept {
  std::uint64_t v;
  std::memcpy(&v, k.bytes.data(), sizeof v);  // the key is already a uniform hash
  return static_cast<std::size_t>(v);
}

// Every field is fed as: 'F' u64(label size) label type-tag u64(value size) value. Sizes make
// the encoding prefix-free, so no two different field sequences feed the same bytes.
Hasher::Hasher(std::uint32_t key_format_version, Fields fields) : m_keep_fields(fields == Fields::keep) {
  field("key-format", std::uint64_t{key_format_version});
}

// 'F' u64(label size) label type u64(value size): one update for labels up to 64 bytes (all of
// kjit's), three otherwise.
void Hasher::feed_header(std::string_view label, char type, std::uint64_t size) {
  unsigned char head[9 + 64 + 9];
  head[0] = 'F';
  put_u64(head + 1, label.size());
  std::size_t n = 9;
  if (label.size() <= 64) {
    std::memcpy(head + n, label.data(), label.size());
    n += label.size();
  } else {
    m_hash.update(head, n);
    m_hash.update(label.data(), label.size());
    n = 0;
  }
  head[n] = static_cast<unsigned char>(type);
  put_u64(head + n + 1, size);
  m_hash.update(head, n + 9);
}

Hasher& Hasher::field(std::string_view label, std::string_view value) {
  feed_header(label, 's', value.size());
  m_hash.update(value.data(), value.size());
  if (!m_keep_fields) return *this;
  if (value.size() <= k_max_shown_value && printable(value)) {
    m_fields.push_back({std::string(label), std::string(value)});
  } else {
    const system::Hash128 h = system::xxh3_128(value.data(), value.size());
    m_fields.push_back(
        {std::string(label), fmt::format("<{} bytes, xxh3 {:016x}{:016x}>", value.size(), h.high64, h.low64)});
  }
  return *this;
}

Hasher& Hasher::field(std::string_view label, std::uint64_t value) {
  feed_header(label, 'u', 8);
  unsigned char v[8];
  put_u64(v, value);
  m_hash.update(v, sizeof v);
  if (m_keep_fields) m_fields.push_back({std::string(label), std::to_string(value)});
  return *this;
}

std::string Hasher::describe() const {
  std::string out;
  for (const auto& f : m_fields) out += fmt::format("{}: {}\n", f.label, f.value);
  out += fmt::format("key: {}\n", finish().hex());
  return out;
}

Key Hasher::finish() const {
  // XXH3-128's canonical form: high 64 bits, then low, each big-endian.
  const system::Hash128 h = m_hash.digest();
  Key key;
  for (int i = 0; i < 8; ++i) {
    key.bytes[i] = static_cast<std::uint8_t>(h.high64 >> (56 - 8 * i));
    key.bytes[8 + i] = static_cast<std::uint8_t>(h.low64 >> (56 - 8 * i));
  }
  return key;
}

}  // namespace kjit::cache
