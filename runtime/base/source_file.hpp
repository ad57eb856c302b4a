// kjit::compile::read_file and check_no_nul: the library's one whole-file reader, and the check
// that a text handed to NVRTC has no NUL byte (NVRTC takes C strings: it would compile what comes
// before the NUL and silently drop the rest). read_file returns the errno of a failure as data;
// read_text_file throws IoError (what was read, which file, why) and UsageError for a NUL byte.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace kjit::base {

// A whole file, or the errno of the open or read that failed (0: read).
struct FileContent {
  std::string bytes;
  int error = 0;
  bool ok() const noexcept { return error == 0; }
};

FileContent read_file(const std::filesystem::path& path);
// The file as text for NVRTC or a parser: "reading <what> <path>: <why>" as IoError when it
// cannot be read; check_no_nul when it has a NUL byte.
std::string read_text_file(const std::filesystem::path& path, std::string_view what);
// Throws UsageError "<what> <name> has a NUL byte at offset N" when `text` holds one.
void check_no_nul(std::string_view text, std::string_view what, std::string_view name);

}  // namespace kjit::base
