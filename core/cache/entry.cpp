#include "core/cache/entry.hpp"

#include "core/system/hash.hpp"
#include "core/system/little_endian.hpp"

#include <fmt/format.h>

#include <cstring>

namespace kjit::cache {

namespace {

constexpr char k_magic[4] = {'K', 'J', 'I', 'T'};
constexpr std::size_t k_key_offset = 4 + 2 + 2 + 8;
constexpr std::size_t k_header_size = k_key_offset + 16;
constexpr std::size_t k_section_header_size = 2 + 8;
constexpr std::size_t k_checksum_size = 16;

using system::get_le;
using system::put_le;

void put_be64(std::string& out, std::uint64_t v) {
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>(v >> (8 * i)));
}

std::uint64_t get_be64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | static_cast<unsigned char>(p[i]);
  return v;
}

bool known_kind(std::uint64_t kind) {
  return kind >= static_cast<std::uint16_t>(SectionKind::cubin) &&
         kind <= static_cast<std::uint16_t>(SectionKind::kernel_types);
}

}  // namespace

const std::string* Entry::find(SectionKind kind) const {
  for (const auto& [k, bytes] : sections) {
    if (k == kind) return &bytes;
  }
  return nullptr;
}

void Entry::set(SectionKind kind, std::string bytes) {
  for (auto& [k, existing] : sections) {
    if (k == kind) {
      existing = std::move(bytes);
      return;
    }
  }
  sections.emplace_back(kind, std::move(bytes));
}

std::string serialize(const Key& key, const Entry& entry) {
  std::uint64_t payload = 0;
  for (const auto& section : entry.sections) payload += k_section_header_size + section.second.size();
  std::string out;
  out.reserve(k_header_size + payload + k_checksum_size);
  out.append(k_magic, sizeof k_magic);
  put_le(out, k_entry_format_version, 2);
  put_le(out, entry.sections.size(), 2);
  put_le(out, payload, 8);
  out.append(reinterpret_cast<const char*>(key.bytes.data()), key.bytes.size());
  for (const auto& [kind, bytes] : entry.sections) {
    put_le(out, static_cast<std::uint16_t>(kind), 2);
    put_le(out, bytes.size(), 8);
    out.append(bytes);
  }
  const system::Hash128 h = system::xxh3_128(out.data(), out.size());
  put_be64(out, h.high64);
  put_be64(out, h.low64);
  return out;
}

InPlaceParse parse_in_place(std::string_view bytes) {
  InPlaceParse out;
  auto fail = [&out](std::string why) {
    out.sections.clear();
    out.error = std::move(why);
    return std::move(out);
  };
  if (bytes.empty()) return fail("empty file");
  if (bytes.size() < k_header_size + k_checksum_size) {
    return fail(fmt::format("truncated: {} bytes, less than the {}-byte header and checksum", bytes.size(),
                            k_header_size + k_checksum_size));
  }
  if (std::memcmp(bytes.data(), k_magic, sizeof k_magic) != 0) return fail("bad magic (not a kjit cache entry)");
  const auto version = get_le(bytes.data() + 4, 2);
  if (version != k_entry_format_version) {
    return fail(fmt::format("unsupported format version {} (expected {})", version, k_entry_format_version));
  }
  const auto section_count = get_le(bytes.data() + 6, 2);
  std::memcpy(out.key.bytes.data(), bytes.data() + k_key_offset, out.key.bytes.size());
  const auto payload = get_le(bytes.data() + 8, 8);
  const std::uint64_t available = bytes.size() - k_header_size - k_checksum_size;
  if (payload > available) {
    return fail(fmt::format("truncated: header announces {} payload bytes, file holds {}", payload, available));
  }
  if (payload < available) {
    return fail(fmt::format("{} bytes of trailing garbage after the checksum", available - payload));
  }
  const std::size_t checked = k_header_size + payload;
  const system::Hash128 h = system::xxh3_128(bytes.data(), checked);
  if (get_be64(bytes.data() + checked) != h.high64 || get_be64(bytes.data() + checked + 8) != h.low64) {
    return fail("checksum mismatch");
  }

  // The checksum matched, but a writer with a bug could still have produced nonsense: every
  // section is bounds-checked all the same.
  out.sections.reserve(section_count);
  std::size_t pos = k_header_size;
  for (std::uint64_t i = 0; i < section_count; ++i) {
    if (checked - pos < k_section_header_size) return fail(fmt::format("section {} header out of bounds", i));
    const auto kind = get_le(bytes.data() + pos, 2);
    const auto size = get_le(bytes.data() + pos + 2, 8);
    pos += k_section_header_size;
    if (!known_kind(kind)) return fail(fmt::format("section {} has unknown kind {}", i, kind));
    if (size > checked - pos) return fail(fmt::format("section {} of {} bytes out of bounds", i, size));
    out.sections.push_back({static_cast<SectionKind>(kind), pos, static_cast<std::size_t>(size)});
    pos += size;
  }
  if (pos != checked) return fail(fmt::format("{} unaccounted payload bytes after the last section", checked - pos));
  return out;
}

ParseResult parse(std::string_view bytes) {
  InPlaceParse in_place = parse_in_place(bytes);
  if (!in_place.error.empty()) return ParseResult{std::nullopt, std::move(in_place.error)};
  Entry entry;
  entry.sections.reserve(in_place.sections.size());
  for (const SectionRef& s : in_place.sections) {
    entry.sections.emplace_back(s.kind, std::string(bytes.substr(s.offset, s.size)));
  }
  return ParseResult{std::move(entry), {}, in_place.key};
}

}  // namespace kjit::cache
