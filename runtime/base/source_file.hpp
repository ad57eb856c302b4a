// kjit::base::read_file and check_no_nul: the library's one whole-file reader, and the check
// that a text handed to NVRTC has no NUL byte (NVRTC takes C strings: it would compile what comes
// before the NUL and silently drop the rest). read_file returns why a read failed as data;
// read_text_file throws IoError (what was read, which file, why) and UsageError for a NUL byte.
// Every source, header, kernel file and manifest kjit reads comes through here: a regular file
// (or standard input, /dev/stdin), never more than max_source_size() bytes, so /dev/zero or a
// FIFO cannot make kjit read without bound.
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>

namespace kjit::base {

// A whole file, or the errno of the open or read that failed (0: read) and, where errno alone
// would mislead, what was wrong ("not a regular file", "larger than ...").
struct FileContent {
  std::string bytes;
  int error = 0;
  std::string detail;
  bool ok() const noexcept { return error == 0; }
  // detail, else the errno's text.
  std::string why() const;
};

// The most bytes read_file reads of a source, header or manifest: KJIT_MAX_SOURCE_SIZE (a size:
// 64M, 1G), 64 MiB by default. UsageError for a value that is not a size.
std::uint64_t max_source_size();
inline constexpr std::uint64_t k_default_max_source_size = 64ull << 20;

// `path` must be a regular file (EISDIR for a folder; EINVAL for a FIFO, device or socket, unless
// it is standard input: "-" or /dev/stdin) of at most `max_size` bytes (EFBIG otherwise; a file or
// stream is never read past max_size + 1 bytes).
FileContent read_file(const std::filesystem::path& path, std::uint64_t max_size);
FileContent read_file(const std::filesystem::path& path);  // max_size = max_source_size()
// The file as text for NVRTC or a parser: "reading <what> <path>: <why>" as IoError when it
// cannot be read (or is not a regular file, or is too large); check_no_nul when it has a NUL byte.
std::string read_text_file(const std::filesystem::path& path, std::string_view what);
// Throws UsageError "<what> <name> has a NUL byte at offset N" when `text` holds one.
void check_no_nul(std::string_view text, std::string_view what, std::string_view name);

}  // namespace kjit::base
