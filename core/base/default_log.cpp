#include "core/base/default_log.hpp"

#include <kjit/error.hpp>

#include "core/base/environment.hpp"

#include <cstdio>
#include <string>

namespace kjit::base {

void print_log(LogLevel level, std::string_view message) {
  // One prefix with the CLI's own lines (and gcc's, nvcc's): "kjit: warning: ...".
  const std::string name = level == LogLevel::warn ? "warning" : std::string(to_string(level));
  std::fprintf(stderr, "kjit: %s: %.*s\n", name.c_str(), static_cast<int>(message.size()), message.data());
}

void default_log(LogLevel level, std::string_view message) {
  LogLevel shown = LogLevel::warn;
  try {
    if (auto l = env_log_level(Env::log)) shown = *l;
  } catch (const UsageError&) {
    // A KJIT_LOG that is no level: a Runtime refuses it; a message is still worth its warning.
  }
  if (level <= shown) print_log(level, message);
}

}  // namespace kjit::base
