// kjit::LogLevel and kjit::LogCallback: how the library reports (it never prints on its own).
// The default callback writes to stderr at warn and above; set your own through RuntimeConfig.
#pragma once

#include <kjit/export.hpp>

#include <functional>
#include <optional>
#include <string_view>

namespace kjit {

enum class LogLevel { error = 0, warn = 1, info = 2, debug = 3 };
using LogCallback = std::function<void(LogLevel, std::string_view message)>;

KJIT_API std::string_view to_string(LogLevel level);
// "error", "warn", "info", "debug"; nullopt otherwise.
KJIT_API std::optional<LogLevel> parse_log_level(std::string_view text);

}  // namespace kjit
