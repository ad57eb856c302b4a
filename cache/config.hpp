// Configuration helpers of the cache: where the cache lives, how sizes and durations are
// spelled on the command line and in the environment, and the CACHEDIR.TAG that tells backup
// tools to skip the folder. Nothing here throws.
#pragma once

#include "cache/dir_trust.hpp"
#include "cache/result.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace kjit::cache {

// `chosen` (KJIT_CACHE_DIR, read by runtime/base's environment table) if not empty, else
// $XDG_CACHE_HOME/kjit (when absolute), else $HOME/.cache/kjit, else the home directory from the
// password database, else <temp dir>/kjit-cache-<uid> (temp_fallback_cache_dir).
std::string default_cache_dir(std::string_view chosen);
// <temp dir>/kjit-cache-<uid>: the fallback in a folder every user may write into, so never a
// team cache and never a symbolic link (cache/dir_trust).
std::string temp_fallback_cache_dir();

// The one reader of a boolean flag's value (every KJIT_* flag goes through it): 1, 0, true,
// false, yes, no, on, off in any case, surrounding blanks ignored; an empty value is false.
// nullopt for anything else (the caller names the variable and the value in its error).
std::optional<bool> parse_flag(std::string_view text);

// "a" + "b" and "a/" + "b" both give "a/b": paths as strings, for the hit path (see Store::get).
std::string join_path(std::string base, std::string_view tail);

// "1048576", "100k", "512M", "2G", "1.5GiB", "3 TB": a number (fractions allowed) with an
// optional unit, case-insensitive. Units are powers of 1024 whatever the spelling
// (k = K = KB = KiB = 1024). nullopt for anything else, negatives, or values over 2^64 - 1.
std::optional<std::uint64_t> parse_size(std::string_view text);

// The longest duration kjit keeps: 100 years. Longer ones (parsed, or set through the API)
// saturate to it, so that now + d and now - d fit every clock kjit uses (nanoseconds) and a
// Redis expiry: "200000d" means "forever", never a negative that expires everything at once.
inline constexpr std::chrono::seconds k_max_duration{36525ll * 86400};
// `d` within [0, k_max_duration].
std::chrono::milliseconds saturate_duration(std::chrono::milliseconds d);

// "45", "30s", "10m", "2h", "7d", "2w", "1.5h": a number with an optional unit (s, m, h, d, w;
// none means seconds). nullopt for anything else or negatives. Fractions round down to seconds;
// anything longer than k_max_duration is k_max_duration.
std::optional<std::chrono::seconds> parse_duration(std::string_view text);

// parse_duration() that also takes "ms" and keeps milliseconds: "50ms", "0.2s", "2" (seconds).
std::optional<std::chrono::milliseconds> parse_duration_ms(std::string_view text);

// The standard tag (https://bford.info/cachedir/) and its file name.
inline constexpr std::string_view k_cachedir_tag_name = "CACHEDIR.TAG";
inline constexpr std::string_view k_cachedir_tag_signature = "Signature: 8a477f597d28d172789f06886806bc55";

// Writes <dir>/CACHEDIR.TAG (atomically) unless it exists. A Failure says why it could not.
Result<void> write_cachedir_tag(const std::filesystem::path& dir);
// The same inside the open folder `dir_fd` (named `dir` in messages), never following a link,
// the file created with `mode`.
Result<void> write_cachedir_tag_at(int dir_fd, const std::string& dir, FileMode mode);

}  // namespace kjit::cache
