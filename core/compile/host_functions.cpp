#include "core/compile/host_functions.hpp"

#include "core/compile/source/lexer.hpp"
#include "core/compile/scan/template_kernels.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <optional>
#include <utility>

namespace kjit::compile {
namespace {

constexpr std::string_view k_unannotated_function =
    "A function without execution space annotations (__host__/__device__/__global__) is considered a host function";
constexpr std::string_view k_host_function = "A function explicitly marked as a __host__ function is not allowed in JIT mode";
constexpr std::string_view k_host_variable =
    "A namespace scope variable without memory space annotations (__device__/__constant__/__shared__/__managed__) is "
    "considered a host variable";

bool is_identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string_view next_line(std::string_view log, std::size_t& pos) {
  if (pos >= log.size()) return {};
  std::size_t end = log.find('\n', pos);
  if (end == std::string_view::npos) end = log.size();
  std::string_view line = log.substr(pos, end - pos);
  pos = end + 1;
  return line;
}

// The words that make a declaration device code (memory and execution spaces).
constexpr std::array<std::string_view, 5> k_device_words = {"__global__", "__device__", "__constant__", "__shared__",
                                                            "__managed__"};

bool is_device_word(std::string_view w) {
  return std::find(k_device_words.begin(), k_device_words.end(), w) != k_device_words.end();
}

// A file's tokens with what the walks below need: the bracket each (, [ and { closes with (and
// back), directives left out of the pairing.
class TokenText {
public:
  explicit TokenText(std::string_view text) : m_text(text), m_tokens(lex(text)), m_match(m_tokens.size(), npos) {
    std::vector<std::size_t> open;
    for (std::size_t i = 0; i < m_tokens.size(); ++i) {
      if (m_tokens[i].directive || m_tokens[i].kind != TokenKind::punctuator) continue;
      const std::string_view t = text_of(i);
      if (t == "(" || t == "[" || t == "{") {
        open.push_back(i);
      } else if (t == ")" || t == "]" || t == "}") {
        const char want = t == ")" ? '(' : t == "]" ? '[' : '{';
        // An unbalanced closer (a macro's half) pairs with nothing; the walks then give up.
        if (!open.empty() && text_of(open.back())[0] == want) {
          m_match[open.back()] = i;
          m_match[i] = open.back();
          open.pop_back();
        }
      }
    }
  }

  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  std::size_t size() const { return m_tokens.size(); }
  const Token& operator[](std::size_t i) const { return m_tokens[i]; }
  std::string_view text_of(std::size_t i) const { return m_tokens[i].text(m_text); }
  bool is(std::size_t i, std::string_view w) const { return i < m_tokens.size() && !m_tokens[i].directive && text_of(i) == w; }
  std::size_t match(std::size_t i) const { return m_match[i]; }
  // The next token past `i` that is on no directive's line, or size().
  std::size_t next(std::size_t i) const {
    for (++i; i < m_tokens.size() && m_tokens[i].directive;) ++i;
    return i;
  }
  // The one before `i` on no directive's line, or npos.
  std::size_t previous(std::size_t i) const {
    while (i-- > 0) {
      if (!m_tokens[i].directive) return i;
    }
    return npos;
  }
  std::string_view text() const { return m_text; }

private:
  std::string_view m_text;
  std::vector<Token> m_tokens;
  std::vector<std::size_t> m_match;
};

bool is_class_key(std::string_view w) { return w == "struct" || w == "class" || w == "union" || w == "enum"; }

// Where the declaration holding token `i` starts: past the `;`, `{` or `}` that ends what comes before
// it at its level (a class body's `}` of `struct S { ... } s;` belongs to it), past an access
// specifier's colon, or past a directive. Groups ((...), [...]) are passed over whole.
std::size_t declaration_start(const TokenText& t, std::size_t i) {
  std::size_t k = t.previous(i);
  std::size_t start = i;
  while (k != TokenText::npos) {
    const std::string_view w = t.text_of(k);
    if (w == ";" || w == "{") break;
    if (w == ":") {
      const std::size_t p = t.previous(k);
      if (p != TokenText::npos &&
          (t.text_of(p) == "public" || t.text_of(p) == "private" || t.text_of(p) == "protected")) {
        break;
      }
    }
    if (w == "}") {
      const std::size_t open = t.match(k);
      if (open == TokenText::npos) break;
      const std::size_t before = t.previous(open);
      // A class body of this declaration ("struct S { ... } s;"): its head holds a class key and the
      // brace does not follow a parameter list.
      bool class_body = before != TokenText::npos && t.text_of(before) != ")";
      if (class_body) {
        bool key = false;
        for (std::size_t h = before; h != TokenText::npos; h = t.previous(h)) {
          const std::string_view hw = t.text_of(h);
          if (hw == ";" || hw == "{" || hw == "}") break;
          if (is_class_key(hw)) key = true;
        }
        class_body = key;
      }
      if (!class_body) break;
      start = open;
      k = t.previous(open);
      continue;
    }
    if ((w == ")" || w == "]") && t.match(k) != TokenText::npos) {
      start = t.match(k);
      k = t.previous(start);
      continue;
    }
    start = k;
    k = t.previous(k);
  }
  return start;
}

// Past the `;` that ends a declaration from token `j` on, groups passed over whole; npos when the
// text ends first or a `}` closes the scope.
std::size_t past_semicolon(const TokenText& t, std::size_t j) {
  for (; j < t.size(); j = t.next(j)) {
    const std::string_view w = t.text_of(j);
    if (w == ";") return t.next(j);
    if (w == "}") return TokenText::npos;
    if ((w == "(" || w == "[" || w == "{") && t.match(j) != TokenText::npos) j = t.match(j);
  }
  return TokenText::npos;
}

// Past a function's body, or the `;` of its declaration, from its name at `i`; npos when the shape
// is not a function's.
std::size_t function_end(const TokenText& t, std::size_t i) {
  std::size_t j = i;
  if (t.is(j, "~")) j = t.next(j);
  // The name: qualified (A::f, A<T>::f), an operator, template arguments of a specialization.
  for (;;) {
    if (j >= t.size()) return TokenText::npos;
    if (t.text_of(j) == "operator") {
      j = t.next(j);
      if (t.is(j, "(") && t.is(t.next(j), ")")) j = t.next(t.next(j));  // operator()
      while (j < t.size() && !t.is(j, "(")) j = t.next(j);
      break;
    }
    if (t[j].kind != TokenKind::identifier) return TokenText::npos;
    j = t.next(j);
    if (t.is(j, "<")) {
      int depth = 0;
      for (; j < t.size(); j = t.next(j)) {
        const std::string_view w = t.text_of(j);
        if (w == "<") ++depth;
        else if (w == ">") --depth;
        else if (w == ">>") depth -= 2;
        else if (w == ";" || w == "{" || w == "}") return TokenText::npos;
        if (depth <= 0) break;
      }
      j = t.next(j);
    }
    if (t.is(j, "::")) {
      j = t.next(j);
      if (t.is(j, "~")) j = t.next(j);
      continue;
    }
    break;
  }
  if (!t.is(j, "(") || t.match(j) == TokenText::npos) return TokenText::npos;
  j = t.next(t.match(j));
  auto past_body = [&t](std::size_t open) -> std::size_t {
    if (t.match(open) == TokenText::npos) return TokenText::npos;
    std::size_t end = t.next(t.match(open));
    while (t.is(end, "catch")) {  // a function-try-block's handlers
      const std::size_t paren = t.next(end);
      if (!t.is(paren, "(") || t.match(paren) == TokenText::npos) return TokenText::npos;
      const std::size_t body = t.next(t.match(paren));
      if (!t.is(body, "{") || t.match(body) == TokenText::npos) return TokenText::npos;
      end = t.next(t.match(body));
    }
    return end;
  };
  for (; j < t.size(); j = t.next(j)) {
    const std::string_view w = t.text_of(j);
    if (w == ";") return t.next(j);
    if (w == "{") return past_body(j);
    if (w == "=") return past_semicolon(t, j);
    if (w == "}") return TokenText::npos;
    if (w == ":") {
      // A constructor's member initializers: id(...) or id{...}, comma-separated, then the body.
      j = t.next(j);
      for (;;) {
        while (j < t.size() && !t.is(j, "(") && !t.is(j, "{")) {
          if (t.is(j, ";") || t.is(j, "}")) return TokenText::npos;
          j = t.next(j);
        }
        if (j >= t.size() || t.match(j) == TokenText::npos) return TokenText::npos;
        j = t.next(t.match(j));
        if (t.is(j, "...")) j = t.next(j);
        if (t.is(j, ",")) {
          j = t.next(j);
          continue;
        }
        if (t.is(j, "{")) return past_body(j);
        return TokenText::npos;
      }
    }
    if ((w == "(" || w == "[") && t.match(j) != TokenText::npos) j = t.match(j);
  }
  return TokenText::npos;
}

// The byte offsets where each line of `text` starts (line 1 at index 0).
std::vector<std::size_t> line_starts(std::string_view text) {
  std::vector<std::size_t> out{0};
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') out.push_back(i + 1);
  }
  return out;
}

// The token NVRTC's caret points at: on line `d.line`, spelled `d.name` (or '~'), the one nearest
// to the caret's column.
std::size_t token_at(const TokenText& t, const std::vector<std::size_t>& starts, const HostDeclaration& d) {
  if (d.line < 1 || static_cast<std::size_t>(d.line) > starts.size()) return TokenText::npos;
  const std::size_t line_start = starts[static_cast<std::size_t>(d.line) - 1];
  const std::string_view want = d.name.empty() ? std::string_view("~") : std::string_view(d.name);
  std::size_t best = TokenText::npos;
  std::size_t best_distance = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i].line != static_cast<std::uint32_t>(d.line) || t[i].directive || t.text_of(i) != want) continue;
    const std::size_t column = t[i].offset - line_start;
    const std::size_t caret = d.column > 0 ? static_cast<std::size_t>(d.column - 1) : 0;
    const std::size_t distance = column > caret ? column - caret : caret - column;
    if (best == TokenText::npos || distance < best_distance) {
      best = i;
      best_distance = distance;
    }
  }
  return best;
}

// A template kernel named in [from, to) as written, with its template arguments when they follow.
std::string written_instance(const TokenText& t, std::size_t i, std::size_t to) {
  std::size_t j = t.next(i);
  if (j >= to || !t.is(j, "<")) return std::string(t.text_of(i));
  int depth = 0;
  for (; j < to; j = t.next(j)) {
    const std::string_view w = t.text_of(j);
    if (w == "<") ++depth;
    else if (w == ">") --depth;
    else if (w == ">>") depth -= 2;
    else if (w == "<<<" || w == ";" || w == "{") return std::string(t.text_of(i));
    if (depth <= 0) break;
  }
  if (j >= to) return std::string(t.text_of(i));
  const std::size_t begin = t[i].offset;
  std::string out;
  // One space between tokens that had any: "k<float, 128>".
  for (std::size_t k = i; k <= j; k = t.next(k)) {
    if (k != i && t[k].offset > t[t.previous(k)].offset + t[t.previous(k)].length) {
      if (t.text_of(k) != ">" && t.text_of(k) != "," && t.text_of(t.previous(k)) != "<") out += ' ';
    }
    out += t.text_of(k);
  }
  (void)begin;
  return out;
}

bool contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

HostCodeErrors find_host_code(std::string_view log) {
  HostCodeErrors out;
  bool other_error = false;
  std::size_t pos = 0;
  while (pos < log.size()) {
    const std::string_view line = next_line(log, pos);
    const std::size_t err = line.find("): error: ");
    if (err == std::string_view::npos) {
      if (line.find("catastrophic error") != std::string_view::npos) other_error = true;
      continue;
    }
    const std::size_t open = line.rfind('(', err);
    const std::string_view message = line.substr(err + 10);
    HostDeclaration d;
    if (message.starts_with(k_unannotated_function)) {
      d.kind = HostDeclaration::Kind::function;
    } else if (message.starts_with(k_host_function)) {
      d.kind = HostDeclaration::Kind::function;
      d.explicit_host = true;
    } else if (message.starts_with(k_host_variable)) {
      d.kind = HostDeclaration::Kind::variable;
    } else {
      other_error = true;
      continue;
    }
    if (open == std::string_view::npos) {
      other_error = true;
      continue;
    }
    d.file = std::string(line.substr(0, open));
    d.line = std::atoi(std::string(line.substr(open + 1, err - open - 1)).c_str());
    // NVRTC prints the source line indented by two, and a caret under the name.
    std::size_t peek = pos;
    const std::string_view excerpt = next_line(log, peek);
    const std::string_view caret = next_line(log, peek);
    const std::size_t column = caret.find('^');
    if (column != std::string_view::npos && column < excerpt.size() && excerpt.starts_with("  ")) {
      pos = peek;
      std::size_t end = column;
      while (end < excerpt.size() && is_identifier_char(excerpt[end])) ++end;
      d.name = std::string(excerpt.substr(column, end - column));
      d.column = static_cast<int>(column - 2 + 1);
      d.is_constexpr = d.kind == HostDeclaration::Kind::function &&
                       excerpt.substr(0, column).find("constexpr") != std::string_view::npos;
    }
    const bool seen = std::any_of(out.declarations.begin(), out.declarations.end(), [&d](const HostDeclaration& o) {
      return o.file == d.file && o.line == d.line && o.column == d.column;
    });
    if (!seen) out.declarations.push_back(std::move(d));
  }
  out.only_these = !other_error && !out.declarations.empty();
  return out;
}

namespace {

// Whether `text` defines the macro `name` only after `offset`: a function of that name before the
// definition is a function, not the macro's invocation (llm.c's `void cublasCheck(...) {...}`, then
// `#define cublasCheck(status) { cublasCheck((status), __FILE__, __LINE__); }`).
bool defined_after_only(std::string_view text, std::string_view name, std::size_t offset) {
  const std::vector<Token> tokens = lex(text);
  bool after = false;
  for (std::size_t i = 0; i + 2 < tokens.size(); ++i) {
    if (!tokens[i].directive || tokens[i].text(text) != "#" || directive_name(text, tokens, i) != "define") continue;
    if (tokens[i + 2].text(text) != name) continue;
    if (tokens[i].offset < offset) return false;
    after = true;
  }
  return after;
}

}  // namespace

ProgramContext program_context(const std::vector<std::string_view>& texts) {
  ProgramContext out;
  std::map<std::string, std::vector<std::string>> replacement_names;  // macro -> identifiers of its replacements
  std::vector<std::string> function_like;
  for (const std::string_view text : texts) {
    const std::vector<Token> tokens = lex(text);
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      if (!tokens[i].directive || tokens[i].text(text) != "#" || directive_name(text, tokens, i) != "define") continue;
      const std::size_t end = end_of_line(tokens, i);
      std::size_t n = i + 2;  // '#', 'define', the name
      if (n >= end || tokens[n].kind != TokenKind::identifier) continue;
      const std::string name(tokens[n].text(text));
      const bool function = n + 1 < end && tokens[n + 1].text(text) == "(" &&
                            tokens[n + 1].offset == tokens[n].offset + tokens[n].length;
      if (function && !contains(function_like, name)) function_like.push_back(name);
      auto& names = replacement_names[name];
      for (std::size_t k = n + 1; k < end; ++k) {
        if (tokens[k].kind == TokenKind::identifier) names.emplace_back(tokens[k].text(text));
      }
      i = end - 1;
    }
    for (std::string qualified : template_kernels(text)) {
      const std::size_t colon = qualified.rfind("::");
      std::string name = colon == std::string::npos ? qualified : qualified.substr(colon + 2);
      if (contains(out.qualified, qualified)) continue;
      out.template_kernels.push_back(std::move(name));
      out.qualified.push_back(std::move(qualified));
    }
  }
  // A macro holds device code when its replacement names a device word or such a macro.
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [name, names] : replacement_names) {
      if (contains(out.device_macros, name)) continue;
      const bool device = std::any_of(names.begin(), names.end(), [&out](const std::string& w) {
        return is_device_word(w) || contains(out.device_macros, w);
      });
      if (device) {
        out.device_macros.push_back(name);
        grew = true;
      }
    }
  }
  for (auto& name : function_like) {
    if (!contains(out.device_macros, name)) out.function_macros.push_back(name);
  }
  return out;
}

std::variant<HostCodeLeftOut, std::string> leave_out_host_code(std::string_view text, std::string_view file,
                                                                const std::vector<HostDeclaration>& found,
                                                                const ProgramContext& context) {
  const TokenText t(text);
  const std::vector<std::size_t> starts = line_starts(text);
  struct Extent {
    std::size_t begin, end;  // token indices [begin, end)
    LeftOut what;
  };
  std::vector<Extent> extents;
  for (const HostDeclaration& d : found) {
    if (d.file != file || d.is_constexpr) continue;
    const std::string where = fmt::format("{} ({}:{})", d.name.empty() ? std::string("a destructor") : d.name, file, d.line);
    const std::size_t i = token_at(t, starts, d);
    if (i == TokenText::npos) return fmt::format("{} is not where NVRTC's error puts it", where);
    Extent e{};
    e.what.file = std::string(file);
    e.what.line = d.line;
    e.what.name = d.name;
    e.what.kind = d.kind;
    const std::size_t after = t.next(i);
    if (contains(context.device_macros, d.name)) {
      return fmt::format("{} is made by a macro whose expansion holds device code", where);
    }
    if (contains(context.function_macros, d.name) && t.is(after, "(") && t.match(after) != TokenText::npos &&
        !defined_after_only(text, d.name, t[i].offset)) {
      // A function made by a macro: its invocation ("HOST_FN(bump)"), with a ';' after it.
      e.begin = i;
      e.end = t.next(t.match(after));
      if (t.is(e.end, ";")) e.end = t.next(e.end);
      e.what.macro = d.name;
      const std::size_t argument = t.next(after);
      if (argument < t.size() && t[argument].kind == TokenKind::identifier) e.what.name = t.text_of(argument);
    } else {
      e.begin = declaration_start(t, i);
      e.end = d.kind == HostDeclaration::Kind::function ? function_end(t, i) : past_semicolon(t, t.next(i));
      if (e.end == TokenText::npos) return fmt::format("the end of {} is not found", where);
    }
    // Never a byte of device code: a kernel, device function or variable inside the extent keeps
    // the program as it is; a __device__ lambda inside a host function goes with it.
    for (std::size_t k = e.begin; k < e.end && k < t.size(); k = t.next(k)) {
      if (t[k].kind != TokenKind::identifier) continue;
      const std::string_view w = t.text_of(k);
      if (w == "__device__") {
        std::size_t p = t.previous(k);
        if (p != TokenText::npos && t.text_of(p) == "__host__") p = t.previous(p);
        if (p != TokenText::npos && t.text_of(p) == "]") {
          ++e.what.device_lambdas;
          continue;
        }
        return fmt::format("{} holds device code (__device__)", where);
      }
      if (is_device_word(w) || contains(context.device_macros, w)) {
        return fmt::format("{} holds device code ({})", where, w);
      }
      if (contains(context.template_kernels, w)) {
        std::string instance = written_instance(t, k, e.end);
        if (!contains(e.what.instantiations, instance)) e.what.instantiations.push_back(std::move(instance));
      }
    }
    // One declaration reported twice (a declarator list, a constructor and its class's use) is
    // left out once; the names all go into the note.
    const auto same = std::find_if(extents.begin(), extents.end(),
                                   [&e](const Extent& o) { return e.begin < o.end && o.begin < e.end; });
    if (same != extents.end()) {
      if (e.begin < same->begin || e.end > same->end) return fmt::format("{} overlaps another declaration", where);
      if (same->what.name != e.what.name && !e.what.name.empty()) same->what.name += ", " + e.what.name;
      continue;
    }
    extents.push_back(std::move(e));
  }
  HostCodeLeftOut out;
  out.text = std::string(text);
  for (auto& e : extents) {
    for (std::size_t k = e.begin; k < e.end && k < t.size(); ++k) {
      if (t[k].directive) continue;  // a directive inside a body stays: it may define what comes after
      for (std::size_t b = t[k].offset; b < t[k].offset + t[k].length; ++b) {
        if (out.text[b] != '\n' && out.text[b] != '\r') out.text[b] = ' ';
      }
    }
    out.left_out.push_back(std::move(e.what));
  }
  std::sort(out.left_out.begin(), out.left_out.end(), [](const LeftOut& a, const LeftOut& b) { return a.line < b.line; });
  return out;
}

bool is_cccl_host_file(std::string_view file) {
  // Host code NVRTC refuses in CUB or Thrust: their device-wide algorithms and what launches them
  // (cub/device/, cub/detail/launcher/, thrust/system/cuda/...).
  return file.find("/cub/") != std::string_view::npos || file.find("/thrust/") != std::string_view::npos ||
         file.starts_with("cub/") || file.starts_with("thrust/");
}

std::string explain_cccl_host_code(std::string_view log) {
  constexpr std::string_view refused = "not allowed in JIT mode";
  for (std::size_t at = log.find(refused); at != std::string_view::npos; at = log.find(refused, at + 1)) {
    const std::size_t line_start = log.rfind('\n', at) == std::string_view::npos ? 0 : log.rfind('\n', at) + 1;
    const std::string_view line = log.substr(line_start, at - line_start);
    const std::string_view file = line.substr(0, line.find('('));
    if (!is_cccl_host_file(file)) continue;
    return "kjit: CUB's device-wide algorithms (<cub/device/...>: cub::DeviceReduce, ...) and Thrust's launch kernels "
           "from the host, which NVRTC has not: in a kernel, include the block, warp and thread headers it uses "
           "(<cub/block/block_reduce.cuh>, <cub/warp/warp_reduce.cuh>, <cub/thread/thread_reduce.cuh>, ...) or "
           "<cub/cub.cuh>, which kjit serves without its host-side parts; keep host code in "
           "#ifndef __CUDACC_RTC__ (docs/headers.md)\n";
  }
  return {};
}

namespace {

// `written` ("k<float, 128>") with its kernel's namespaces when one kernel of that name has them.
std::string qualified_instance(std::string_view written, const ProgramContext& context) {
  const std::size_t end = std::min(written.find('<'), written.size());
  const std::string_view name = written.substr(0, end);
  if (name.find("::") != std::string_view::npos) return std::string(written);
  std::string found;
  for (std::size_t i = 0; i < context.template_kernels.size(); ++i) {
    if (context.template_kernels[i] != name) continue;
    if (!found.empty() && found != context.qualified[i]) return std::string(written);  // two: as written
    found = context.qualified[i];
  }
  return found.empty() ? std::string(written) : found + std::string(written.substr(end));
}

}  // namespace

std::vector<std::string> instantiation_expressions(const std::vector<LeftOut>& left_out, const ProgramContext& context) {
  std::vector<std::string> out;
  for (const auto& l : left_out) {
    for (const auto& i : l.instantiations) {
      if (i.find('<') == std::string::npos) continue;  // a name without arguments: deduced, not nameable here
      std::string e = qualified_instance(i, context);
      if (!contains(out, e)) out.push_back(std::move(e));
    }
  }
  return out;
}

std::string explain_left_out(const std::vector<LeftOut>& left_out, const ProgramContext& context,
                             const std::vector<std::string>& kept) {
  if (left_out.empty()) return {};
  std::string list;
  for (const auto& l : left_out) {
    std::string what = l.kind == HostDeclaration::Kind::variable ? "the variable " + l.name : l.name;
    if (what.empty()) what = "a destructor";
    if (!l.macro.empty()) what += fmt::format(" (made by the macro {})", l.macro);
    list += fmt::format("{}{} ({}:{})", list.empty() ? "" : ", ", what, l.file, l.line);
  }
  std::string out = fmt::format("kjit: host code left out: {}; nvcc compiles it for the host only, and NVRTC has no "
                                "host (docs/headers.md)\n",
                                list);
  std::string kept_list;
  for (const auto& k : kept) kept_list += fmt::format("{}{}", kept_list.empty() ? "" : ", ", k);
  if (!kept_list.empty()) {
    out += fmt::format("kjit: template kernels that host code instantiated, compiled by name as nvcc compiles them: {}\n",
                       kept_list);
  }
  for (const auto& l : left_out) {
    std::string names, lines;
    for (const auto& i : l.instantiations) {
      if (contains(kept, qualified_instance(i, context))) continue;
      names += fmt::format("{}{}", names.empty() ? "" : ", ", i);
      lines += fmt::format(" --instantiate '{}'", qualified_instance(i, context));
    }
    if (!names.empty()) {
      out += fmt::format("kjit: warning: kernels that {} ({}:{}) instantiates went with it: {}; nvcc compiles them. "
                         "Name each instance to keep it:{} (Program::instantiate; with the template arguments "
                         "that code gives them)\n",
                         l.name, l.file, l.line, names, lines);
    }
    if (l.device_lambdas > 0) {
      out += fmt::format("kjit: warning: {} __device__ lambda{} in {} ({}:{}) went with it: the kernels a CCCL "
                         "algorithm makes of {} in host code are not compiled\n",
                         l.device_lambdas, l.device_lambdas > 1 ? "s" : "", l.name, l.file, l.line,
                         l.device_lambdas > 1 ? "them" : "it");
    }
  }
  return out;
}

std::string explain_host_definitions(const std::vector<HostDeclaration>& found, std::string_view why_kept) {
  std::string list;
  for (const auto& f : found) {
    if (f.is_constexpr || is_cccl_host_file(f.file)) continue;  // CCCL's: explain_cccl_host_code
    const std::string name = f.name.empty() ? std::string("a function") : f.name;
    list += fmt::format("\n  {}{} ({}:{})", f.kind == HostDeclaration::Kind::variable ? "the variable " : "", name, f.file,
                        f.line);
  }
  if (list.empty()) return {};
  return fmt::format(
      "kjit: these functions and variables have no __device__, so they are host code, which nvcc would "
      "compile for the host; NVRTC compiles device code only and refuses them:{}\n"
      "{}"
      "kjit: keep host code (main, its headers, the CUDA runtime calls) out of NVRTC's sight with "
      "#ifndef __CUDACC_RTC__ ... #endif around it (NVRTC defines __CUDACC_RTC__, nvcc does not: the file still "
      "builds with nvcc), annotate a function __device__ (or __host__ __device__) to call it from a kernel, or "
      "move host code out of the kernel file.\n",
      list, why_kept.empty() ? std::string() : fmt::format("kjit: they were not left out: {}\n", why_kept));
}

std::string explain_host_declarations(const std::vector<HostDeclaration>& found) {
  std::string list;
  for (const auto& f : found) {
    if (f.is_constexpr) list += fmt::format("{}{}", list.empty() ? "" : ", ", f.name.empty() ? "?" : f.name);
  }
  if (list.empty()) return {};
  return fmt::format("kjit: constexpr functions without __device__ ({}) compiled as device functions "
                     "(-default-device), as nvcc lets device code call them (--expt-relaxed-constexpr)\n",
                     list);
}

}  // namespace kjit::compile
