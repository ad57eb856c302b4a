// kjit::cache::Entry: one cache entry (cubin, PTX, log, lowered names, metadata) and its
// on-disk encoding. parse() never throws and never trusts its input: every length is checked
// against the bytes present and the checksum is verified before any section is returned.
//
//   <entry>    ::= <header> <sections> <checksum>
//   <header>   ::= magic "KJIT" u16 format_version u16 section_count u64 payload_size key[16]
//   <sections> ::= ( u16 kind u64 size bytes )*      (payload_size = total bytes of <sections>)
//   <checksum> ::= XXH3-128 of header + sections     (16 bytes, big-endian high then low)
//   integers are little-endian; kinds: 1 cubin, 2 ptx, 3 log, 4 lowered_names, 5 meta, 6 ltoir,
//   7 tuning (a tuner's decision: an entry of its own, under a key of its own domain), 8 kernel_types
//   (pairs of names, as lowered_names: what the compiler said of the parameters of C-named entry points)
// The header records the key the entry was stored under: an entry read under another key (a
// file copied or planted under another name) is refused by the store, never served.
#pragma once

#include "core/system/tools_api.hpp"
#include "core/cache/key.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kjit::cache {

enum class SectionKind : std::uint16_t { cubin = 1, ptx = 2, log = 3, lowered_names = 4, meta = 5, ltoir = 6, tuning = 7,
                                         kernel_types = 8 };

inline constexpr std::uint16_t k_entry_format_version = 2;  // 2: the key in the header

struct Entry {
  std::vector<std::pair<SectionKind, std::string>> sections;

  // The first section of this kind, or nullptr.
  const std::string* find(SectionKind kind) const;
  void set(SectionKind kind, std::string bytes);
};

// The encoded bytes of an entry stored under `key`.
std::string serialize(const Key& key, const Entry& entry);

// Why parse() refused some bytes ("truncated", "bad magic", "unsupported format version 7",
// "checksum mismatch", ...), or the parsed entry.
struct ParseResult {
  std::optional<Entry> entry;
  std::string error;  // empty when entry is set
  Key key;            // the key recorded in the header, when entry is set
};
ParseResult parse(std::string_view bytes);

// Where one section lies in an entry's bytes.
struct SectionRef {
  SectionKind kind;
  std::size_t offset;
  std::size_t size;
};
// parse() without copying: the same checks, the sections as offsets into `bytes`, in file
// order. `error` is empty when the bytes are a whole, checked entry.
struct InPlaceParse {
  std::vector<SectionRef> sections;
  Key key;  // the key recorded in the header
  std::string error;
};
KJIT_TOOLS_API InPlaceParse parse_in_place(std::string_view bytes);

}  // namespace kjit::cache
