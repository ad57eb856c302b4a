// kjit::base::read_source_file, read_text_file and check_no_nul: how kjit reads what it hands to
// NVRTC or a parser, and the check that such a text has no NUL byte (NVRTC takes C strings: it
// would compile what comes before the NUL and silently drop the rest). Every source, header,
// kernel file and manifest kjit reads comes through here: system::read_file (kjit's one reader: a
// regular file or standard input) capped at max_source_size() bytes, so /dev/zero or a FIFO cannot
// make kjit read without bound. read_source_file returns why a read failed as data;
// read_text_file throws IoError (what was read, which file, why) and UsageError for a NUL byte.
#pragma once

#include "core/base/tools_api.hpp"

#include "core/system/file_io.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace kjit::base {

// The most bytes read of a source, header or manifest: KJIT_MAX_SOURCE_SIZE (a size: 64M, 1G),
// 64 MiB by default. UsageError for a value that is not a size.
std::uint64_t max_source_size();
inline constexpr std::uint64_t k_default_max_source_size = 64ull << 20;

// system::read_file(path, max_source_size()); a file over the cap says so and names
// KJIT_MAX_SOURCE_SIZE (EFBIG).
system::FileContent read_source_file(const std::filesystem::path& path);
// The file as text for NVRTC or a parser: "reading <what> <path>: <why>" as IoError when it
// cannot be read (or is not a regular file, or is too large); check_no_nul when it has a NUL byte.
KJIT_TOOLS_API std::string read_text_file(const std::filesystem::path& path, std::string_view what);
// Throws UsageError "<what> <name> has a NUL byte at offset N" when `text` holds one.
void check_no_nul(std::string_view text, std::string_view what, std::string_view name);

}  // namespace kjit::base
