// A fixture of ctest build/libkjit_tools_of_another_release_fails_to_load: "libkjit" of another
// release (SONAME libkjit.so.0, its map core/libkjit.map.in configured with another version), as
// far as the libkjit_tools below needs it: one internal it exports for libkjit_tools, under that
// release's KJIT_PRIVATE node, with the real one's signature (core/system/units.hpp).
#include "core/system/units.hpp"

namespace kjit::system {

std::optional<std::uint64_t> parse_size(std::string_view text) { return text.empty() ? std::nullopt : std::optional<std::uint64_t>(1); }

}  // namespace kjit::system
