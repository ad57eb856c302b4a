// kjit::base::default_log: the library's default log callback (include/kjit/log.hpp) and the one
// place in the library that writes to stderr ("kjit: warning: ...", the CLI's prefix too): what a Runtime without
// RuntimeConfig::log reports at its level, and what a part without a Runtime (the Profiler
// without ProfileOptions::log) reports at KJIT_LOG's level (warn when unset or not a level).
#pragma once

#include "core/base/tools_api.hpp"

#include <kjit/log.hpp>

#include <string_view>

namespace kjit::base {

// Writes the line, whatever the level.
void print_log(LogLevel level, std::string_view message);
// print_log() when `level` is within KJIT_LOG's.
KJIT_TOOLS_API void default_log(LogLevel level, std::string_view message);

}  // namespace kjit::base
