#include <kjit/compile_result.hpp>
#include <kjit/log.hpp>

namespace kjit {

std::string_view to_string(Outcome outcome) {
  switch (outcome) {
  case Outcome::hit: return "hit";
  case Outcome::compiled: return "compiled";
  case Outcome::waited: return "waited";
  case Outcome::remote_hit: return "remote_hit";
  }
  return "?";
}

std::string_view to_string(PchUse pch) {
  switch (pch) {
  case PchUse::none: return "-";
  case PchUse::created: return "created";
  case PchUse::used: return "used";
  }
  return "?";
}

std::optional<std::string> CompileResult::lowered_name(std::string_view name_expression) const {
  for (const auto& [expr, mangled] : lowered_names) {
    if (expr == name_expression) return mangled;
  }
  return std::nullopt;
}

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
