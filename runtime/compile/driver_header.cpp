#include "runtime/compile/driver_header.hpp"

#include <cstddef>
#include <optional>

namespace kjit::compile {
namespace {

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// The text without its comments; the newlines inside a block comment are kept (line numbers in
// NVRTC's messages stay close), string and character literals are left alone.
std::string without_comments(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      const std::size_t end = s.find("*/", i + 2);
      const std::size_t stop = end == std::string_view::npos ? s.size() : end + 2;
      bool newline = false;
      for (std::size_t k = i; k < stop; ++k) {
        if (s[k] == '\n') {
          out += '\n';
          newline = true;
        }
      }
      if (!newline) out += ' ';
      i = stop;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (c == '"' || c == '\'') {
      std::size_t k = i + 1;
      while (k < s.size() && s[k] != c && s[k] != '\n') k += s[k] == '\\' ? 2 : 1;
      k = k < s.size() ? k + 1 : s.size();
      out.append(s.substr(i, k - i));
      i = k;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

// Past the parenthesis or brace that closes the one at `open`, or npos.
std::size_t past_closing(std::string_view t, std::size_t open, char opening, char closing) {
  int depth = 0;
  for (std::size_t p = open; p < t.size(); ++p) {
    if (t[p] == opening) ++depth;
    if (t[p] == closing && --depth == 0) return p + 1;
  }
  return std::string_view::npos;
}

// When a host function starts at `pos` (the first character of a statement): the end of its
// declaration (past the ';') or definition (past the '}'). A declaration names CUDAAPI before
// its name ("CUresult CUDAAPI cuInit(unsigned int Flags);", also over two lines, also with
// __CUDA_DEPRECATED); a definition is "static inline ... name(...) { ... }".
std::optional<std::size_t> host_function_end(std::string_view t, std::size_t pos) {
  std::size_t p = pos;
  bool cudaapi = false, is_static = false, is_inline = false;
  int names = 0;
  std::string_view last;
  while (p < t.size()) {
    if (is_blank(t[p])) {
      ++p;
    } else if (t[p] == '\n') {
      std::size_t q = p + 1;
      while (q < t.size() && is_blank(t[q])) ++q;
      if (q < t.size() && t[q] == '#') return std::nullopt;  // a directive: not one statement
      p = q;
    } else if (t[p] == '*') {
      ++p;
    } else if (is_ident_start(t[p])) {
      const std::size_t start = p;
      while (p < t.size() && is_ident(t[p])) ++p;
      last = t.substr(start, p - start);
      if (names == 0 && last == "static") is_static = true;
      if (last == "inline") is_inline = true;
      if (last == "CUDAAPI") cudaapi = true;
      ++names;
    } else {
      break;
    }
  }
  if (p >= t.size() || t[p] != '(' || names < 2 || last == "CUDAAPI") return std::nullopt;
  if (!cudaapi && !(is_static && is_inline)) return std::nullopt;
  std::size_t end = past_closing(t, p, '(', ')');
  if (end == std::string_view::npos) return std::nullopt;
  while (end < t.size() && (is_blank(t[end]) || t[end] == '\n')) ++end;
  if (end < t.size() && t[end] == ';') return end + 1;
  if (end < t.size() && t[end] == '{') {
    const std::size_t body = past_closing(t, end, '{', '}');
    if (body != std::string_view::npos) return body;
  }
  return std::nullopt;
}

}  // namespace

std::string driver_header_types(std::string_view cuda_h) {
  const std::string t = without_comments(cuda_h);
  std::string out = "// kjit: the toolkit's cuda.h for device code: its types and macros, without comments and\n"
                    "// without the driver's host functions (NVRTC refuses host declarations).\n";
  out.reserve(t.size() + out.size());
  std::size_t i = 0;
  bool blank_before = false;
  while (i < t.size()) {
    std::size_t first = i;
    while (first < t.size() && is_blank(t[first])) ++first;
    std::size_t line_end = t.find('\n', i);
    if (line_end == std::string::npos) line_end = t.size();
    if (first < t.size() && t[first] != '#' && t[first] != '\n') {
      if (auto end = host_function_end(t, first)) {
        // Dropped, with what is left of its last line when that is blank.
        std::size_t next = *end;
        while (next < t.size() && is_blank(t[next])) ++next;
        i = next < t.size() && t[next] == '\n' ? next + 1 : next;
        continue;
      }
    }
    // A directive keeps its continuation lines with it.
    if (first < t.size() && t[first] == '#') {
      while (line_end < t.size() && line_end > 0 && t[line_end - 1] == '\\') {
        const std::size_t more = t.find('\n', line_end + 1);
        line_end = more == std::string::npos ? t.size() : more;
      }
    }
    std::string_view line = std::string_view(t).substr(i, line_end - i);
    while (!line.empty() && is_blank(line.back())) line.remove_suffix(1);
    const bool blank = line.find_first_not_of(" \t\r") == std::string_view::npos;
    if (!blank || !blank_before) {
      out.append(line);
      out += '\n';
    }
    blank_before = blank;
    i = line_end + 1;
  }
  return out;
}

}  // namespace kjit::compile
