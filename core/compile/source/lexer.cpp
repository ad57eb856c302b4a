#include "core/compile/source/lexer.hpp"

#include <array>

namespace kjit::compile {
namespace {

bool identifier_start(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c >= 0x80;
}
bool identifier_char(unsigned char c) { return identifier_start(c) || (c >= '0' && c <= '9'); }
bool digit(unsigned char c) { return c >= '0' && c <= '9'; }
bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

// Punctuators of three bytes and of two, longest first. CUDA's launch <<< is one token (nvcc's
// front end reads it so); digraphs (<: %>) are left out: `<::` would need C++11's special rule.
constexpr std::array<std::string_view, 6> k_three = {"<<<", "<<=", ">>=", "...", "->*", "<=>"};
constexpr std::array<std::string_view, 21> k_two = {"::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&",
                                                    "||", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "##"};

class Reader {
public:
  explicit Reader(std::string_view s) : m_s(s), m_n(s.size()) {}

  // Bytes of a line splice (backslash, newline, or backslash, CR, LF) at `i`, or 0.
  std::size_t splice(std::size_t i) const {
    if (i >= m_n || m_s[i] != '\\' || i + 1 >= m_n) return 0;
    if (m_s[i + 1] == '\n') return 2;
    if (m_s[i + 1] == '\r' && i + 2 < m_n && m_s[i + 2] == '\n') return 3;
    return 0;
  }
  // `i`, past any line splices there.
  std::size_t norm(std::size_t i) const {
    while (std::size_t k = splice(i)) i += k;
    return i;
  }
  // The byte at `i` (after norm), or 0 past the end.
  unsigned char at(std::size_t i) const { return i < m_n ? static_cast<unsigned char>(m_s[i]) : 0; }
  std::size_t size() const { return m_n; }

  // Past a // comment starting at `i` (its first '/'): at the newline that ends it.
  std::size_t line_comment(std::size_t i) const {
    std::size_t k = i;
    while (k < m_n) {
      if (std::size_t sp = splice(k)) {
        k += sp;
        continue;
      }
      if (m_s[k] == '\n') break;
      ++k;
    }
    return k;
  }
  // Past a /* comment whose '*' is at `star`.
  std::size_t block_comment(std::size_t star) const {
    std::size_t k = star + 1;
    while (k < m_n) {
      if (m_s[k] == '*') {
        const std::size_t m = norm(k + 1);
        if (m < m_n && m_s[m] == '/') return m + 1;
      }
      ++k;
    }
    return m_n;
  }
  // Past a quoted literal whose opening quote is at `q`: at the closing quote's end, or at the
  // newline (not included) of an unterminated one.
  std::size_t quoted(std::size_t q) const {
    const char quote = m_s[q];
    std::size_t k = q + 1;
    while (true) {
      k = norm(k);
      if (k >= m_n) return m_n;
      const char c = m_s[k];
      if (c == '\\') {
        k = norm(k + 1);
        if (k < m_n && m_s[k] != '\n') ++k;
        continue;
      }
      if (c == quote) return k + 1;
      if (c == '\n') return k;
      ++k;
    }
  }
  // Past a raw string whose '"' is at `q`: R"delim( ... )delim". An ill-formed delimiter makes
  // it an ordinary literal.
  std::size_t raw(std::size_t q) const {
    std::size_t open = q + 1;
    while (open < m_n && open - q - 1 <= 16 && m_s[open] != '(' && m_s[open] != '\n' && m_s[open] != ')' &&
           m_s[open] != '\\' && !blank(m_s[open]) && m_s[open] != '"')
      ++open;
    if (open >= m_n || m_s[open] != '(') return quoted(q);
    std::string close = ")";
    close.append(m_s.substr(q + 1, open - q - 1));
    close += '"';
    const std::size_t end = m_s.find(close, open + 1);
    return end == std::string_view::npos ? m_n : end + close.size();
  }
  // Past a pp-number starting at `i`.
  std::size_t number(std::size_t i) const {
    unsigned char previous = 0;
    std::size_t k = i;
    while (true) {
      k = norm(k);
      const unsigned char c = at(k);
      if (k >= m_n) return k;
      if (identifier_char(c) || c == '.') {
        previous = c;
        ++k;
      } else if ((c == '+' || c == '-') &&
                 (previous == 'e' || previous == 'E' || previous == 'p' || previous == 'P')) {
        previous = c;
        ++k;
      } else if (c == '\'') {
        const std::size_t next = norm(k + 1);
        if (next >= m_n || !identifier_char(at(next))) return k;
        previous = at(next);
        k = next + 1;
      } else {
        return k;
      }
    }
  }
  // Past an identifier starting at `i`.
  std::size_t identifier(std::size_t i) const {
    std::size_t k = i;
    while (true) {
      k = norm(k);
      if (k >= m_n || !identifier_char(at(k))) return k;
      ++k;
    }
  }
  // Past a punctuator starting at `i` (longest match; splices inside allowed).
  std::size_t punctuator(std::size_t i) const {
    std::array<std::size_t, 4> pos{};  // the positions of the next three bytes, splices skipped
    pos[0] = i;
    for (std::size_t k = 1; k < 4; ++k) pos[k] = pos[k - 1] < m_n ? norm(pos[k - 1] + 1) : m_n;
    auto matches = [&](std::string_view p) {
      for (std::size_t k = 0; k < p.size(); ++k) {
        if (pos[k] >= m_n || m_s[pos[k]] != p[k]) return false;
      }
      return true;
    };
    for (auto p : k_three) {
      if (matches(p)) return pos[2] + 1;
    }
    for (auto p : k_two) {
      if (matches(p)) return pos[1] + 1;
    }
    return i + 1;
  }

private:
  std::string_view m_s;
  std::size_t m_n;
};

// The identifier's spelling, splices removed, when it may be a literal's encoding prefix.
bool is_prefix(std::string_view word, bool& raw) {
  raw = !word.empty() && word.back() == 'R';
  if (raw) word.remove_suffix(1);
  return word.empty() ? raw : (word == "u8" || word == "u" || word == "U" || word == "L");
}

}  // namespace

std::vector<Token> lex(std::string_view source) {
  const Reader r(source);
  std::vector<Token> out;
  out.reserve(source.size() / 6 + 1);
  bool line_start = true, in_directive = false;
  int directive_state = 0;  // 1: after a line's '#'; 2: after #include (a header name may come)
  std::size_t line_offset = 0;
  std::uint32_t line = 1;
  std::size_t i = 0;
  while (true) {
    i = r.norm(i);
    if (i >= r.size()) break;
    const char c = source[i];
    if (c == '\n') {
      line_start = true;
      in_directive = false;
      directive_state = 0;
      ++i;
      continue;
    }
    if (blank(c)) {
      ++i;
      continue;
    }
    if (c == '/') {
      const std::size_t j = r.norm(i + 1);
      if (r.at(j) == '/' && j < r.size()) {
        i = r.line_comment(j + 1);
        continue;
      }
      if (r.at(j) == '*' && j < r.size()) {
        i = r.block_comment(j);
        continue;
      }
    }
    Token t;
    t.offset = static_cast<std::uint32_t>(i);
    std::size_t end = i + 1;
    const unsigned char u = static_cast<unsigned char>(c);
    if (directive_state == 2 && c == '<') {
      std::size_t k = i + 1;
      while (k < r.size() && source[k] != '>' && source[k] != '\n') ++k;
      if (k < r.size() && source[k] == '>') {
        t.kind = TokenKind::header_name;
        end = k + 1;
      } else {
        t.kind = TokenKind::punctuator;
        end = r.punctuator(i);
      }
    } else if (identifier_start(u)) {
      end = r.identifier(i);
      t.kind = TokenKind::identifier;
      const std::size_t next = r.norm(end);
      if (next < r.size() && (source[next] == '"' || source[next] == '\'') && end - i <= 8) {
        bool raw = false;
        std::string word;
        for (std::size_t k = i; k < end; k = r.norm(k + 1)) word += source[k];
        if (is_prefix(word, raw) && !(raw && source[next] == '\'')) {
          t.kind = source[next] == '"' ? TokenKind::string : TokenKind::character;
          t.raw = raw;
          end = raw ? r.raw(next) : r.quoted(next);
        }
      }
    } else if (digit(u) || (c == '.' && digit(r.at(r.norm(i + 1))))) {
      t.kind = TokenKind::number;
      end = r.number(i);
    } else if (c == '"' || c == '\'') {
      t.kind = c == '"' ? TokenKind::string : TokenKind::character;
      end = r.quoted(i);
    } else if (c == '\\' || c == '`' || c == '@' || u < 0x20 || u == 0x7f) {
      t.kind = TokenKind::other;
    } else {
      t.kind = TokenKind::punctuator;
      end = r.punctuator(i);
    }
    if (end <= i) end = i + 1;  // never stands still
    t.length = static_cast<std::uint32_t>(end - i);
    for (; line_offset < i; ++line_offset) line += source[line_offset] == '\n';
    t.line = line;
    for (std::size_t k = i; k + 1 < end; ++k) {
      if (r.splice(k)) {
        t.spliced = true;
        break;
      }
    }
    t.line_start = line_start;
    if (line_start && t.kind == TokenKind::punctuator && t.length == 1 && c == '#') {
      in_directive = true;
      directive_state = 1;
    } else if (directive_state == 1) {
      const std::string word = spelling(source, t);
      directive_state = t.kind == TokenKind::identifier && (word == "include" || word == "include_next" || word == "import")
                            ? 2 : 0;
    } else {
      directive_state = 0;
    }
    t.directive = in_directive;
    line_start = false;
    out.push_back(t);
    i = end;
  }
  return out;
}

std::string spelling(std::string_view source, const Token& token) {
  const std::string_view text = token.text(source);
  if (!token.spliced || token.raw) return std::string(text);
  const Reader r(text);
  std::string out;
  out.reserve(text.size());
  for (std::size_t k = r.norm(0); k < text.size(); k = r.norm(k + 1)) out += text[k];
  return out;
}

std::string without_comments(std::string_view source) {
  std::string out(source);
  std::size_t covered = 0;  // bytes before this are a token's or already looked at
  auto blank_between = [&](std::size_t from, std::size_t to) {
    // Between two tokens only whitespace, splices and comments lie: blank all but line breaks and
    // splices (a comment's bytes are never a splice's, and a splice's stay as they were).
    const Reader r(source);
    for (std::size_t k = from; k < to;) {
      if (std::size_t sp = r.splice(k)) {
        k += sp;
        continue;
      }
      if (out[k] != '\n' && !blank(out[k])) out[k] = ' ';
      ++k;
    }
  };
  for (const Token& t : lex(source)) {
    blank_between(covered, t.offset);
    covered = t.offset + t.length;
  }
  blank_between(covered, source.size());
  return out;
}

std::string directive_name(std::string_view source, const std::vector<Token>& tokens, std::size_t at) {
  if (at >= tokens.size() || !tokens[at].directive || !tokens[at].line_start || !tokens[at].is(source, "#")) return {};
  if (at + 1 >= tokens.size() || tokens[at + 1].line_start || tokens[at + 1].kind != TokenKind::identifier) return {};
  return spelling(source, tokens[at + 1]);
}

std::size_t end_of_line(const std::vector<Token>& tokens, std::size_t at) {
  std::size_t k = at + 1;
  while (k < tokens.size() && !tokens[k].line_start) ++k;
  return k;
}

}  // namespace kjit::compile
