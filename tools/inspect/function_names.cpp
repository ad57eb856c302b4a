#include "tools/inspect/function_names.hpp"

#include "core/driver/symbols.hpp"

#include <kjit/error.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

namespace kjit::inspect {
namespace {

bool is_mangled(std::string_view symbol) { return symbol.starts_with("_Z"); }

std::string plain_of(const std::string& symbol) {
  return is_mangled(symbol) ? driver::plain_name(driver::demangle(symbol)) : symbol;
}

}  // namespace

std::vector<std::string> display_names(const std::vector<std::string>& symbols) {
  std::vector<std::string> plain;
  std::map<std::string, int> uses;
  for (const std::string& s : symbols) {
    plain.push_back(plain_of(s));
    ++uses[plain.back()];
  }
  for (std::size_t i = 0; i < symbols.size(); ++i) {
    if (uses[plain[i]] > 1 && is_mangled(symbols[i])) plain[i] = driver::demangle(symbols[i]);
  }
  return plain;
}

std::optional<std::string> resolve_function(const std::vector<std::string>& symbols, std::string_view name,
                                            std::string_view what) {
  if (std::find(symbols.begin(), symbols.end(), name) != symbols.end()) return std::string(name);
  std::vector<std::string> found;
  for (const std::string& s : symbols) {
    if (is_mangled(s) && plain_of(s) == name && std::find(found.begin(), found.end(), s) == found.end()) {
      found.push_back(s);
    }
  }
  if (found.empty()) return std::nullopt;
  if (found.size() > 1) {
    std::vector<std::string> shown;
    for (const std::string& s : found) shown.push_back(fmt::format("{} ({})", driver::demangle(s), s));
    throw UsageError(fmt::format("{}: the name \"{}\" is overloaded: {}; name one by its mangled name", what, name,
                                 fmt::join(shown, ", ")));
  }
  return found.front();
}

}  // namespace kjit::inspect
