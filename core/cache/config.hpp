// Where the cache lives by default, and the CACHEDIR.TAG that tells backup tools to skip the
// folder (how sizes and durations are spelled: core/system/units). Nothing here throws.
#pragma once

#include "core/cache/dir_trust.hpp"
#include "core/system/result.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace kjit::cache {

// `chosen` (KJIT_CACHE_DIR, read by core/base's environment table) if not empty, else
// $XDG_CACHE_HOME/kjit (when absolute), else $HOME/.cache/kjit, else the home directory from the
// password database, else <temp dir>/kjit-cache-<uid> (temp_fallback_cache_dir).
std::string default_cache_dir(std::string_view chosen);
// <temp dir>/kjit-cache-<uid>: the fallback in a folder every user may write into, so never a
// team cache and never a symbolic link (cache/dir_trust).
std::string temp_fallback_cache_dir();
// Its last part, kjit-cache-<uid> (a folder of another name is never the fallback).
std::string temp_fallback_name();

// The standard tag (https://bford.info/cachedir/) and its file name.
inline constexpr std::string_view k_cachedir_tag_name = "CACHEDIR.TAG";
inline constexpr std::string_view k_cachedir_tag_signature = "Signature: 8a477f597d28d172789f06886806bc55";

// Writes <dir>/CACHEDIR.TAG (atomically) unless it exists. A Failure says why it could not.
system::Result<void> write_cachedir_tag(const std::filesystem::path& dir);
// The same inside the open folder `dir_fd` (named `dir` in messages), never following a link,
// the file created with `mode`.
system::Result<void> write_cachedir_tag_at(int dir_fd, const std::string& dir, system::FileMode mode);

}  // namespace kjit::cache
