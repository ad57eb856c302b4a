#include "core/compile/template_kernels.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <regex>

namespace kjit::compile {
namespace {

bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// `source` with comments, string and character literals and preprocessor lines replaced by
// spaces (line breaks kept), so that braces and keywords in them count for nothing.
std::string code_only(std::string_view s) {
  std::string out(s);
  std::size_t i = 0;
  bool line_start = true;
  auto blank = [&out](std::size_t from, std::size_t to) {
    for (std::size_t k = from; k < to && k < out.size(); ++k) {
      if (out[k] != '\n') out[k] = ' ';
    }
  };
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\n') {
      line_start = true;
      ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    if (line_start && c == '#') {  // a directive, with its continuation lines
      std::size_t end = i;
      while (end < s.size() && !(s[end] == '\n' && s[end - 1] != '\\')) ++end;
      blank(i, end);
      i = end;
      continue;
    }
    line_start = false;
    if (s.substr(i, 2) == "//") {
      std::size_t end = s.find('\n', i);
      if (end == std::string_view::npos) end = s.size();
      blank(i, end);
      i = end;
    } else if (s.substr(i, 2) == "/*") {
      std::size_t end = s.find("*/", i + 2);
      end = end == std::string_view::npos ? s.size() : end + 2;
      blank(i, end);
      i = end;
    } else if (c == '"' || c == '\'') {
      // A raw string R"delim( ... )delim".
      if (c == '"' && i > 0 && s[i - 1] == 'R') {
        const std::size_t open = s.find('(', i);
        if (open != std::string_view::npos) {
          const std::string close = ")" + std::string(s.substr(i + 1, open - i - 1)) + "\"";
          std::size_t end = s.find(close, open);
          end = end == std::string_view::npos ? s.size() : end + close.size();
          blank(i, end);
          i = end;
          continue;
        }
      }
      std::size_t end = i + 1;
      while (end < s.size() && s[end] != c && s[end] != '\n') end += s[end] == '\\' ? 2 : 1;
      blank(i, end + 1);
      i = end + 1;
    } else {
      ++i;
    }
  }
  return out;
}

// The identifier that starts at `i` (empty when none).
std::string_view ident_at(std::string_view s, std::size_t i) {
  std::size_t end = i;
  while (end < s.size() && is_ident_char(s[end])) ++end;
  return s.substr(i, end - i);
}

std::size_t skip_space(std::string_view s, std::size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  return i;
}

}  // namespace

std::vector<std::string> template_kernels(std::string_view source) {
  static const std::regex k_kernel(
      R"(^template\s*<[^{;]*>\s*(?:(?:static|inline|__forceinline__|__noinline__)\s+)*__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\()");
  const std::string code = code_only(source);
  const std::string_view s = code;
  // One entry per open brace: the namespace names it opened ("" for another block).
  std::vector<std::vector<std::string>> scopes;
  std::vector<std::string> out;
  auto qualified = [&scopes](const std::string& name) {
    std::string q;
    for (const auto& scope : scopes) {
      for (const auto& n : scope) q += n + "::";
    }
    return q + name;
  };
  auto at_namespace_scope = [&scopes] {
    for (const auto& scope : scopes) {
      if (scope.empty()) return false;
    }
    return true;
  };
  std::vector<std::string> pending;  // the names of a `namespace a::b` before its brace
  bool namespace_open = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '{') {
      scopes.push_back(namespace_open ? pending : std::vector<std::string>{});
      if (namespace_open && pending.empty()) scopes.back().push_back("");  // anonymous: not named
      namespace_open = false;
      pending.clear();
      continue;
    }
    if (c == '}') {
      if (!scopes.empty()) scopes.pop_back();
      continue;
    }
    if (c == ';') {  // `namespace a = b;`
      namespace_open = false;
      pending.clear();
      continue;
    }
    if (!is_ident_char(c) || (i > 0 && is_ident_char(s[i - 1]))) continue;
    const std::string_view word = ident_at(s, i);
    if (word == "namespace") {
      namespace_open = true;
      pending.clear();
      std::size_t p = skip_space(s, i + word.size());
      while (p < s.size() && is_ident_char(s[p])) {
        const std::string_view part = ident_at(s, p);
        if (part != "inline") pending.emplace_back(part);
        p = skip_space(s, p + part.size());
        if (s.substr(p, 2) == "::") p = skip_space(s, p + 2);
      }
      i = p - 1;
      continue;
    }
    if (word == "template" && at_namespace_scope()) {
      const std::size_t end = s.find_first_of("{;", i);
      std::string declaration(s.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i));
      std::smatch m;
      if (std::regex_search(declaration, m, k_kernel)) {
        std::string name = qualified(m[1].str());
        // An anonymous namespace's part is not written: "::" pieces left by it collapse.
        for (std::size_t at; (at = name.find("::::")) != std::string::npos;) name.erase(at, 2);
        if (name.starts_with("::")) name.erase(0, 2);
        if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
      }
    }
    i += word.size() - 1;
  }
  return out;
}

std::string name_expression_hint(std::string_view log, std::string_view source,
                                 const std::vector<std::string>& expressions) {
  if (log.find("Error in parsing name expression") == std::string_view::npos) return {};
  const std::vector<std::string> kernels = template_kernels(source);
  std::string out;
  for (const std::string& expression : expressions) {
    const std::string_view e = expression;
    std::size_t start = e.find_first_not_of(" \t");
    if (start == std::string_view::npos) continue;
    const std::string_view rest = e.substr(start);
    const std::string_view name = rest.substr(0, rest.find_first_of("< \t("));
    if (name.find("::") != std::string_view::npos) continue;  // already qualified
    for (const std::string& kernel : kernels) {
      const std::size_t colons = kernel.rfind("::");
      if (colons == std::string::npos || std::string_view(kernel).substr(colons + 2) != name) continue;
      out += fmt::format("kjit: the name expression \"{}\" is looked up from the global namespace; the template "
                         "kernel {} is in namespace {}: name it \"{}{}\"\n",
                         expression, name, kernel.substr(0, colons), kernel, rest.substr(name.size()));
      break;
    }
  }
  if (out.empty()) {
    out = "kjit: a name expression is looked up from the global namespace: a kernel in a namespace is named with "
          "it (\"ns::kernel<float>\")\n";
  }
  return out;
}

}  // namespace kjit::compile
