// kjit::system::read_file and write_file_atomically: kjit's one whole-file reader and its one
// atomic writer, for cache/, runtime/ and (through kjit::write_file_atomically, <kjit/tools/
// write_file.hpp>) cli/ and inject/. read_file returns the bytes, or why not as data (the errno,
// and message(): "reading <file>: <why>"); write_file_atomically publishes through AtomicFile (a
// unique temporary beside the target, written, fsynced, renamed over it), so a reader, or a
// process killed mid-write, leaves either the old content or the whole new one, and any failure
// removes the temporary. read_fd is the read loop of both read_file and the store's entry reads.
// Nothing here throws.
#pragma once

#include "core/system/tools_api.hpp"
#include "core/system/atomic_file.hpp"
#include "core/system/file_mode.hpp"
#include "core/system/result.hpp"

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>

namespace kjit::system {

inline constexpr std::uint64_t k_no_size_limit = std::numeric_limits<std::uint64_t>::max();

// A whole file, or the errno of the open, stat or read that failed (0: read) and, where errno
// alone would mislead, what was wrong ("not a regular file ...", "larger than 64 MiB").
struct FileContent {
  std::string path;  // the file read, as given
  std::string bytes;
  int error = 0;
  std::string detail;
  bool ok() const noexcept { return error == 0; }
  // detail, else the errno's text ("No such file or directory").
  std::string why() const;
  // "reading <path>: <why>".
  KJIT_TOOLS_API std::string message() const;
};

// Reads `path` whole. It must be a regular file (EISDIR for a folder; EINVAL for a FIFO, device or
// socket, unless it is standard input: "-", /dev/stdin, /dev/fd/0) of at most `max_size` bytes
// (EFBIG, "larger than ..."); a file or stream is never read past max_size + 1 bytes.
KJIT_TOOLS_API FileContent read_file(const std::filesystem::path& path, std::uint64_t max_size = k_no_size_limit);

// Reads `fd` from its offset to its end, or to `limit` bytes, into `out` (replacing what it held),
// with room for `size_hint` bytes first: a hint equal to the limit reads a file of known size with
// no read past it. 0, or the errno of the read that failed (`out` then empty).
int read_fd(int fd, std::string& out, std::uint64_t size_hint, std::uint64_t limit);

// Makes `bytes` the whole content of `path` with AtomicFile (the new file gets `mode`, like any
// new file: 0666 minus the umask by default). A path that is a symbolic link has its target
// replaced, not the link; a path that is a character device or FIFO (/dev/stdout, a pipe) is
// written in place, as nothing can be renamed over it. A Failure names the file and why
// ("creating temporary for /out/a.ptx in /out: Permission denied"); the temporary is gone then.
KJIT_TOOLS_API Result<void> write_file_atomically(const std::filesystem::path& path, std::string_view bytes,
                                   AtomicFile::Sync sync = AtomicFile::Sync::yes, FileMode mode = {});

}  // namespace kjit::system
