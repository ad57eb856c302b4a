// kjit::LogLevel as text, both ways (KJIT_LOG, -v).
#include <kjit/log.hpp>

namespace kjit {

std::string_view to_string(LogLevel level) {
  switch (level) {
  case LogLevel::error: return "error";
  case LogLevel::warn: return "warn";
  case LogLevel::info: return "info";
  case LogLevel::debug: return "debug";
  }
  return "?";
}

std::optional<LogLevel> parse_log_level(std::string_view text) {
  if (text == "error") return LogLevel::error;
  if (text == "warn" || text == "warning") return LogLevel::warn;
  if (text == "info") return LogLevel::info;
  if (text == "debug") return LogLevel::debug;
  return std::nullopt;
}

}  // namespace kjit
