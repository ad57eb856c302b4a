#include "tools/inspect/function_names.hpp"

#include "core/spi/driver.hpp"

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

// A name as a comparison key: no spaces ("scale<float, 256>" and "scale<float,256>" are one).
std::string without_spaces(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c != ' ') out += c;
  }
  return out;
}

// A plain name without its template arguments ("copy_kernel" for "copy_kernel<float>").
std::string_view without_template_arguments(std::string_view plain) {
  const std::size_t open = plain.find('<');
  return open == std::string_view::npos ? plain : plain.substr(0, open);
}

// A plain name without its namespaces and classes ("relu<float>" for "ops::relu<float>"): what
// follows the last "::" outside the template arguments.
std::string_view unqualified(std::string_view plain) {
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < plain.size(); ++i) {
    if (plain[i] == '<') ++depth;
    else if (plain[i] == '>') --depth;
    else if (depth == 0 && plain[i] == ':' && i + 1 < plain.size() && plain[i + 1] == ':') start = i + 2;
  }
  return plain.substr(start);
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
  auto find = [&](auto&& matches) {
    for (const std::string& s : symbols) {
      if (is_mangled(s) && matches(plain_of(s)) && std::find(found.begin(), found.end(), s) == found.end()) {
        found.push_back(s);
      }
    }
  };
  find([&](const std::string& plain) { return plain == name; });
  // A template's instance as kjit lists it, spaced either way ("scale<float,256>").
  if (found.empty()) {
    const std::string key = without_spaces(name);
    find([&](const std::string& plain) { return without_spaces(plain) == key; });
  }
  // A template's name alone: its one instance, or which ones there are.
  if (found.empty() && name.find('<') == std::string_view::npos) {
    find([&](const std::string& plain) { return plain.find('<') != std::string::npos && without_template_arguments(plain) == name; });
    if (found.size() > 1) {
      std::vector<std::string> shown;
      for (const std::string& s : found) shown.push_back(plain_of(s));
      throw UsageError(fmt::format("{}: the name \"{}\" is ambiguous: the template has {} instances, {}; name one "
                                   "(\"{}\")",
                                   what, name, found.size(), fmt::join(shown, ", "), shown.front()));
    }
  }
  // A kernel in a namespace by its unqualified name ("relu" for ops::relu, "gelu<float>" for
  // ops::gelu<float>), when it names one function only: the same three ways as above.
  if (found.empty() && name.find("::") == std::string_view::npos) {
    const std::string key = without_spaces(name);
    find([&](const std::string& plain) {
      const std::string_view u = unqualified(plain);
      return u.size() < plain.size() && (u == name || without_spaces(u) == key);
    });
    if (found.empty() && name.find('<') == std::string_view::npos) {
      find([&](const std::string& plain) {
        const std::string_view u = unqualified(plain);
        return u.size() < plain.size() && u.find('<') != std::string_view::npos && without_template_arguments(u) == name;
      });
    }
    if (found.size() > 1) {
      std::vector<std::string> shown;
      for (const std::string& s : found) shown.push_back(plain_of(s));
      throw UsageError(fmt::format("{}: the name \"{}\" is ambiguous: it names {}; name one with its namespace "
                                   "(\"{}\")",
                                   what, name, fmt::join(shown, ", "), shown.front()));
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
