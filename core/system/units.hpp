// How sizes, durations and flags are spelled on the command line and in the environment: the
// one reader of each, for the environment table (core/base), the CLI's options and the cache's
// settings. Nothing here throws.
#pragma once

#include "core/system/tools_api.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kjit::system {

// The one reader of a boolean flag's value (every KJIT_* flag goes through it): 1, 0, true,
// false, yes, no, on, off in any case, surrounding blanks ignored; an empty value is false.
// nullopt for anything else (the caller names the variable and the value in its error).
std::optional<bool> parse_flag(std::string_view text);

// "a" + "b" and "a/" + "b" both give "a/b": paths as strings, for the hit path (see Store::get).
std::string join_path(std::string base, std::string_view tail);

// "1048576", "100k", "512M", "2G", "1.5GiB", "3 TB": a number (fractions allowed) with an
// optional unit, case-insensitive. Units are powers of 1024 whatever the spelling
// (k = K = KB = KiB = 1024). nullopt for anything else, negatives, or values over 2^64 - 1.
KJIT_TOOLS_API std::optional<std::uint64_t> parse_size(std::string_view text);

// The longest duration kjit keeps: 100 years. Longer ones (parsed, or set through the API)
// saturate to it, so that now + d and now - d fit every clock kjit uses (nanoseconds) and a
// Redis expiry: "200000d" means "forever", never a negative that expires everything at once.
inline constexpr std::chrono::seconds k_max_duration{36525ll * 86400};
// `d` within [0, k_max_duration].
std::chrono::milliseconds saturate_duration(std::chrono::milliseconds d);

// "45", "30s", "10m", "2h", "7d", "2w", "1.5h": a number with an optional unit (s, m, h, d, w;
// none means seconds). nullopt for anything else or negatives. Fractions round down to seconds;
// anything longer than k_max_duration is k_max_duration.
KJIT_TOOLS_API std::optional<std::chrono::seconds> parse_duration(std::string_view text);

// parse_duration() that also takes "ms" and keeps milliseconds: "50ms", "0.2s", "2" (seconds).
std::optional<std::chrono::milliseconds> parse_duration_ms(std::string_view text);

}  // namespace kjit::system
