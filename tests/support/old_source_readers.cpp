// The readers of CUDA source kjit had before its one lexer (compile::lex), kept verbatim from the
// tree at 7c1b211 for tests/unit/test_source_differential.cpp, which runs them beside the
// lexer's consumers over every kernel file and explains each difference. Test code only.
#include "support/old_source_readers.hpp"

#include <algorithm>
#include <cctype>
#include <functional>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace kjit::test::old {
namespace source_scan {
constexpr std::string_view k_device_launch = "<<<";
constexpr std::string_view k_macro_include = "#include MACRO";
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

std::string_view first_name_impl(std::string_view t, const std::function<bool(std::string_view)>& wanted) {
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

}  // namespace source_scan

namespace include_scanner {
std::vector<std::pair<std::string, bool>> include_lines(const std::string& text) {
  std::vector<std::pair<std::string, bool>> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::size_t i = pos;
    auto skip_space = [&] { while (i < end && (text[i] == ' ' || text[i] == '\t')) ++i; };
    skip_space();
    if (i < end && text[i] == '#') {
      ++i;
      skip_space();
      if (text.compare(i, 7, "include") == 0) {
        i += 7;
        skip_space();
        if (i < end && (text[i] == '"' || text[i] == '<')) {
          char close = text[i] == '"' ? '"' : '>';
          std::size_t close_pos = text.find(close, i + 1);
          if (close_pos != std::string::npos && close_pos < end) {
            out.emplace_back(text.substr(i + 1, close_pos - i - 1), close == '"');
          }
        }
      }
    }
    pos = end + 1;
  }
  return out;
}

}  // namespace include_scanner

namespace template_scan {
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

}  // namespace template_scan

namespace toolkit_headers {
namespace {
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

}  // namespace
std::string comments_out(std::string_view s) { return without_comments(s); }
}  // namespace toolkit_headers

namespace parameters {
namespace {
std::vector<std::string_view> tokens(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
    std::size_t j = i;
    while (j < s.size() && !(s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r')) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}
// `source` without its comments (each replaced by a space) and without string literals' contents.
std::string without_comments(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source.compare(i, 2, "//") == 0) {
      while (i < source.size() && source[i] != '\n') ++i;
      out += '\n';
    } else if (source.compare(i, 2, "/*") == 0) {
      std::size_t end = source.find("*/", i + 2);
      i = end == std::string_view::npos ? source.size() : end + 1;
      out += ' ';
    } else if (source[i] == '"') {
      out += '"';
      for (++i; i < source.size() && source[i] != '"'; ++i) {
        if (source[i] == '\\') ++i;
      }
      out += '"';
    } else {
      out += source[i];
    }
  }
  return out;
}

bool is_identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The declarators of a parameter list's text ("const float* matrix, int n = 4" -> {"const float*",
// "matrix"}, {"int", "n"}; "float a[]" -> {"float*", "a"}); nullopt when one has no name.
std::optional<std::vector<std::pair<std::string, std::string>>> declarators(std::string_view list) {
  std::vector<std::pair<std::string, std::string>> out;
  int depth = 0;
  std::size_t start = 0;
  auto one = [&](std::string_view piece) -> bool {
    if (auto eq = piece.find('='); eq != std::string_view::npos) piece = piece.substr(0, eq);
    bool array = false;
    if (auto bracket = piece.find('['); bracket != std::string_view::npos) {
      piece = piece.substr(0, bracket);
      array = true;
    }
    std::size_t end = piece.size();
    while (end > 0 && !is_identifier_char(piece[end - 1])) --end;
    std::size_t begin = end;
    while (begin > 0 && is_identifier_char(piece[begin - 1])) --begin;
    if (begin == end || std::isdigit(static_cast<unsigned char>(piece[begin]))) return false;
    std::string_view name = piece.substr(begin, end - begin);
    std::string_view before = piece.substr(0, begin);
    // "int" alone or "float*" alone has no name: the last identifier is then a type.
    bool has_type = before.find_first_not_of(" \t\r\n") != std::string_view::npos;
    if (!has_type || name == "const" || name == "volatile" || name == "__restrict__") return false;
    std::string type;
    for (auto t : tokens(before)) type += (type.empty() ? "" : " ") + std::string(t);
    if (array) type += "*";
    out.emplace_back(std::move(type), std::string(name));
    return true;
  };
  auto blank = [](std::string_view t) { return t.find_first_not_of(" \t\r\n") == std::string_view::npos; };
  if (blank(list) || tokens(list) == std::vector<std::string_view>{"void"}) return out;  // "()", "(void)"
  for (std::size_t i = 0; i <= list.size(); ++i) {
    char c = i < list.size() ? list[i] : ',';
    if (c == '(' || c == '<' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ')' || c == '>' || c == ']' || c == '}') {
      --depth;
    } else if (c == ',' && depth == 0) {
      if (!one(list.substr(start, i - start))) return std::nullopt;
      start = i + 1;
    }
  }
  return out;
}

}  // namespace

// The old read_declaration's search, for a kernel's plain name and arity: the names it read.
std::optional<std::vector<std::string>> parameter_names(std::string_view source, const std::string& plain,
                                                        std::size_t arity) {
  const std::string text = without_comments(source);
  std::optional<std::vector<std::pair<std::string, std::string>>> chosen;
  for (std::size_t at = 0; (at = text.find(plain, at)) != std::string::npos; at += plain.size()) {
    if (at > 0 && is_identifier_char(text[at - 1])) continue;
    std::size_t open = text.find_first_not_of(" \t\r\n", at + plain.size());
    if (open == std::string::npos || text[open] != '(') continue;
    std::size_t head = text.find_last_of(";{}#", at);
    std::string_view declaration(text.data() + (head == std::string::npos ? 0 : head + 1),
                                 at - (head == std::string::npos ? 0 : head + 1));
    if (declaration.find("__global__") == std::string_view::npos) continue;
    int depth = 0;
    std::size_t close = open;
    for (; close < text.size(); ++close) {
      if (text[close] == '(') ++depth;
      else if (text[close] == ')' && --depth == 0) break;
    }
    if (close >= text.size()) break;
    auto found = declarators(std::string_view(text).substr(open + 1, close - open - 1));
    if (!found || found->size() != arity) continue;
    if (chosen && *chosen != *found) return std::nullopt;
    chosen = std::move(found);
  }
  if (!chosen) return std::nullopt;
  std::vector<std::string> names;
  for (const auto& d : *chosen) names.push_back(d.second);
  return names;
}
}  // namespace parameters

std::string first_name(std::string_view text, const std::function<bool(std::string_view)>& wanted) {
  return std::string(source_scan::first_name_impl(text, wanted));
}
std::vector<std::pair<std::string, bool>> include_lines(const std::string& text) {
  return include_scanner::include_lines(text);
}
std::vector<std::string> template_kernels(std::string_view source) { return template_scan::template_kernels(source); }
std::string without_comments(std::string_view source) { return toolkit_headers::comments_out(source); }
std::optional<std::vector<std::string>> parameter_names(std::string_view source, const std::string& plain,
                                                        std::size_t arity) {
  return parameters::parameter_names(source, plain, arity);
}

}  // namespace kjit::test::old
