// kjit::write_file_atomically: kjit's one atomic writer for programs that use only the public API
// (the `kjit` CLI's -o files and reports, the profiler's injection library): the new content goes
// to a unique temporary beside `path`, is fsynced and renamed over it, so a reader, or a process
// killed mid-write, sees the old content or the whole new one, never a part, and a failure leaves
// no temporary behind. A symbolic link keeps pointing where it did (its target gets the content);
// a character device or FIFO (/dev/stdout) is written in place. Throws IoError naming the file and
// why ("creating temporary for out/a.ptx in out: Permission denied").
#pragma once

#include <kjit/export.hpp>

#include <filesystem>
#include <string_view>

namespace kjit {

KJIT_API void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

}  // namespace kjit
