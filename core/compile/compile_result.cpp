#include <kjit/compile_result.hpp>

namespace kjit {

std::string_view to_string(Outcome outcome) {
  switch (outcome) {
  case Outcome::hit: return "hit";
  case Outcome::compiled: return "compiled";
  case Outcome::waited: return "waited";
  case Outcome::remote_hit: return "remote_hit";
  case Outcome::registry: return "registry";
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

}  // namespace kjit
