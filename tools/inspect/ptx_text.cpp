#include "tools/inspect/ptx_text.hpp"

namespace kjit::inspect::text {

std::string strip_comments(std::string_view ptx) {
  std::string out;
  out.reserve(ptx.size());
  std::size_t i = 0;
  const std::size_t n = ptx.size();
  while (i < n) {
    const char c = ptx[i];
    if (c == '"') {
      // A string literal (".file 1 \"a//b.cu\""): copy to its end or the end of the line.
      out += c;
      ++i;
      while (i < n && ptx[i] != '"' && ptx[i] != '\n') {
        if (ptx[i] == '\\' && i + 1 < n && ptx[i + 1] != '\n') {
          out += ptx[i++];
        }
        out += ptx[i++];
      }
      if (i < n && ptx[i] == '"') out += ptx[i++];
    } else if (c == '/' && i + 1 < n && ptx[i + 1] == '/') {
      while (i < n && ptx[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < n && ptx[i + 1] == '*') {
      i += 2;
      while (i < n && !(ptx[i] == '*' && i + 1 < n && ptx[i + 1] == '/')) {
        if (ptx[i] == '\n') out += '\n';
        ++i;
      }
      i = i < n ? i + 2 : n;
      out += ' ';
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      if (start < text.size()) lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (is_blank(s.front()) || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (is_blank(s.back()) || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

std::string collapse_spaces(std::string_view s) {
  s = trim(s);
  std::string out;
  out.reserve(s.size());
  bool in_space = false;
  for (char c : s) {
    if (is_blank(c) || c == '\n') {
      in_space = true;
      continue;
    }
    if (in_space) out += ' ';
    in_space = false;
    out += c;
  }
  return out;
}

bool starts_with_word(std::string_view s, std::string_view word) {
  if (s.substr(0, word.size()) != word) return false;
  return s.size() == word.size() || !is_ident_char(s[word.size()]);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

std::string_view ident_at(std::string_view s, std::size_t pos) {
  if (pos >= s.size() || !is_ident_start(s[pos])) return {};
  std::size_t end = pos + 1;
  while (end < s.size() && is_ident_char(s[end])) ++end;
  return s.substr(pos, end - pos);
}

}  // namespace kjit::inspect::text
