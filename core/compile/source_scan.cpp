#include "core/compile/source_scan.hpp"

#include <algorithm>
#include <cctype>
#include <string>

namespace kjit::compile {
namespace {

bool identifier_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Past a comment, string or character literal starting at `i` (one of / " '), or `i` itself.
std::size_t skip_literal_or_comment(std::string_view t, std::size_t i) {
  const char c = t[i];
  if (c == '/' && i + 1 < t.size() && t[i + 1] == '/') {
    std::size_t end = t.find('\n', i);
    while (end != std::string_view::npos && end > 0 && t[end - 1] == '\\') end = t.find('\n', end + 1);
    return end == std::string_view::npos ? t.size() : end;
  }
  if (c == '/' && i + 1 < t.size() && t[i + 1] == '*') {
    const std::size_t end = t.find("*/", i + 2);
    return end == std::string_view::npos ? t.size() : end + 2;
  }
  if (c == '"' || c == '\'') {
    std::size_t j = i + 1;
    while (j < t.size() && t[j] != c && t[j] != '\n') j += t[j] == '\\' ? 2 : 1;
    return std::min(j + 1, t.size());
  }
  return i;
}

// A raw string literal R"delim( ... )delim" starting at `i` (the R): past it, or npos.
std::size_t skip_raw_string(std::string_view t, std::size_t i) {
  if (t.compare(i, 2, "R\"") != 0) return std::string_view::npos;
  const std::size_t open = t.find('(', i + 2);
  if (open == std::string_view::npos) return std::string_view::npos;
  const std::string close = ")" + std::string(t.substr(i + 2, open - i - 2)) + "\"";
  const std::size_t end = t.find(close, open + 1);
  return end == std::string_view::npos ? t.size() : end + close.size();
}

// At a line's `#` (`i`): past the target of an #include of a <...> or "..." header; `macro` set
// when the target is a macro. Any other directive: past the `#` (its words are names).
std::size_t skip_include(std::string_view t, std::size_t i, bool& macro) {
  std::size_t j = i + 1;
  while (j < t.size() && (t[j] == ' ' || t[j] == '\t')) ++j;
  if (t.compare(j, 7, "include") != 0) return i + 1;
  j += 7;
  if (t.compare(j, 5, "_next") == 0) j += 5;
  while (j < t.size() && (t[j] == ' ' || t[j] == '\t')) ++j;
  if (j < t.size() && (t[j] == '<' || t[j] == '"')) {
    const std::size_t end = t.find(t[j] == '<' ? '>' : '"', j + 1);
    return end == std::string_view::npos ? t.size() : end + 1;
  }
  macro = true;
  return j;
}

}  // namespace

std::string_view first_name(std::string_view t, const std::function<bool(std::string_view)>& wanted) {
  bool line_start = true;
  std::size_t i = 0;
  while (i < t.size()) {
    const char c = t[i];
    if (c == '\n') {
      line_start = true;
      ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    if (c == '#' && line_start) {
      bool macro = false;
      i = skip_include(t, i, macro);
      if (macro && wanted(k_macro_include)) return k_macro_include;
      line_start = false;
      continue;
    }
    line_start = false;
    if (c == '/' || c == '"' || (c == '\'' && !(i > 0 && identifier_char(t[i - 1])))) {  // 1'000 is a number
      const std::size_t next = skip_literal_or_comment(t, i);
      i = next > i ? next : i + 1;
      continue;
    }
    if (c == '<' && t.compare(i, 3, k_device_launch) == 0) {
      if (wanted(k_device_launch)) return k_device_launch;
      i += 3;
      continue;
    }
    if (identifier_start(c)) {
      if (const std::size_t raw = skip_raw_string(t, i); raw != std::string_view::npos) {
        i = raw;
        continue;
      }
      std::size_t j = i + 1;
      while (j < t.size() && identifier_char(t[j])) ++j;
      const std::string_view id = t.substr(i, j - i);
      if (wanted(id)) return id;
      i = j;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {  // a number's suffix is no name (1.0f, 0x1CU)
      while (i < t.size() && (identifier_char(t[i]) || t[i] == '.' || t[i] == '\'')) ++i;
      continue;
    }
    ++i;
  }
  return {};
}

}  // namespace kjit::compile
