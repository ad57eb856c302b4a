// parse_ptx and PtxModule's lookups: PTX text -> module-level statements and functions.
#include "tools/inspect/ptx_parser.hpp"
#include "core/compile/kernel_types.hpp"

#include "tools/inspect/ptx_text.hpp"

#include <kjit/tools/inspect.hpp>

namespace kjit::inspect {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }

// True when `.entry` or `.func` appears as a word in the line (outside brackets).
bool declares_function(std::string_view line) {
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] != '.') continue;
    if (i > 0 && text::is_ident_char(line[i - 1])) continue;
    const std::string_view word = text::ident_at(line, i + 1);
    if (word == "entry" || word == "func") return true;
  }
  return false;
}

// Index of the first '{' or ';' at parenthesis depth 0 from `pos`, or npos.
std::size_t find_body_or_end(std::string_view s, std::size_t pos) {
  int parens = 0;
  for (std::size_t i = pos; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(') ++parens;
    else if (c == ')') parens = parens > 0 ? parens - 1 : 0;
    else if (parens == 0 && (c == '{' || c == ';')) return i;
  }
  return std::string_view::npos;
}

// Index just past the '}' matching the '{' at `open`, or s.size() when unbalanced; then
// `unclosed` says how many braces the text left open.
std::size_t match_brace(std::string_view s, std::size_t open, int* unclosed = nullptr) {
  int depth = 0;
  for (std::size_t i = open; i < s.size(); ++i) {
    if (s[i] == '{') ++depth;
    else if (s[i] == '}' && --depth == 0) {
      if (unclosed) *unclosed = 0;
      return i + 1;
    }
  }
  if (unclosed) *unclosed = depth;
  return s.size();
}

// End of a module-level statement starting at `pos`: a ';' or a newline at bracket depth 0.
std::size_t statement_end(std::string_view s, std::size_t pos) {
  int depth = 0;
  for (std::size_t i = pos; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '{' || c == '(' || c == '[') ++depth;
    else if ((c == '}' || c == ')' || c == ']') && depth > 0) --depth;
    else if (depth == 0 && c == ';') return i + 1;
    else if (depth == 0 && c == '\n') return i;
  }
  return s.size();
}

// Splits `s` at top-level commas (outside brackets).
std::vector<std::string> split_commas(std::string_view s) {
  std::vector<std::string> parts;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    const char c = i < s.size() ? s[i] : ',';
    if (c == '(' || c == '[' || c == '{' || c == '<') ++depth;
    else if ((c == ')' || c == ']' || c == '}' || c == '>') && depth > 0) --depth;
    else if (c == ',' && (depth == 0 || i == s.size())) {
      std::string part = text::collapse_spaces(s.substr(start, i - start));
      if (!part.empty()) parts.push_back(std::move(part));
      start = i + 1;
    }
  }
  return parts;
}

// The text between the '(' at `open` and its ')'; `end` is set just past the ')'.
std::string_view paren_group(std::string_view s, std::size_t open, std::size_t& end) {
  int depth = 0;
  for (std::size_t i = open; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    else if (s[i] == ')' && --depth == 0) {
      end = i + 1;
      return s.substr(open + 1, i - open - 1);
    }
  }
  end = s.size();
  return s.substr(std::min(open + 1, s.size()));
}

std::size_t skip_spaces(std::string_view s, std::size_t pos) {
  while (pos < s.size() && is_space(s[pos])) ++pos;
  return pos;
}

void parse_header(std::string_view header, PtxFunction& f) {
  // linkage words, then .entry/.func
  std::size_t pos = 0;
  std::string linkage;
  while (true) {
    pos = skip_spaces(header, pos);
    if (pos >= header.size()) return;
    std::size_t end = pos;
    while (end < header.size() && !is_space(header[end]) && header[end] != '(') ++end;
    if (end == pos) ++end;  // a '(' before .entry/.func: keep it as a word
    const std::string_view word = header.substr(pos, end - pos);
    pos = end;
    if (word == ".entry" || word == ".func") {
      f.is_entry = word == ".entry";
      break;
    }
    if (!linkage.empty()) linkage += ' ';
    linkage += word;
  }
  f.linkage = linkage;
  pos = skip_spaces(header, pos);
  if (!f.is_entry && pos < header.size() && header[pos] == '(') {
    std::size_t end = pos;
    f.return_params = split_commas(paren_group(header, pos, end));
    pos = skip_spaces(header, end);
  }
  std::size_t name_end = pos;
  while (name_end < header.size() && !is_space(header[name_end]) && header[name_end] != '(') ++name_end;
  f.name = std::string(header.substr(pos, name_end - pos));
  pos = skip_spaces(header, name_end);
  if (pos < header.size() && header[pos] == '(') {
    std::size_t end = pos;
    f.params = split_commas(paren_group(header, pos, end));
    pos = end;
  }
  // Performance directives (.maxntid 256, 1, 1 .minnctapersm 2 .noreturn ...).
  std::string rest = text::collapse_spaces(header.substr(std::min(pos, header.size())));
  std::string current;
  std::size_t i = 0;
  while (i < rest.size()) {
    std::size_t end = rest.find(' ', i);
    if (end == std::string::npos) end = rest.size();
    const std::string_view word = std::string_view(rest).substr(i, end - i);
    if (!word.empty() && word.front() == '.' && !current.empty()) {
      f.directives.push_back(current);
      current.clear();
    }
    if (!current.empty()) current += ' ';
    current += word;
    i = end + 1;
  }
  if (!current.empty()) f.directives.push_back(current);
}

}  // namespace

std::vector<RegisterDecl> parse_reg_declaration(std::string_view statement) {
  std::vector<RegisterDecl> regs;
  std::string_view s = text::trim(statement);
  if (!text::starts_with_word(s, ".reg")) return regs;
  s.remove_prefix(4);
  if (!s.empty() && s.back() == ';') s.remove_suffix(1);
  // Type words start with '.', then comma-separated names.
  std::string type;
  std::size_t pos = 0;
  while (true) {
    pos = skip_spaces(s, pos);
    if (pos >= s.size() || s[pos] != '.') break;
    std::size_t end = pos;
    while (end < s.size() && !is_space(s[end])) ++end;
    if (!type.empty()) type += ' ';
    type += s.substr(pos, end - pos);
    pos = end;
  }
  for (const std::string& name : split_commas(s.substr(std::min(pos, s.size())))) {
    RegisterDecl decl;
    decl.type = type;
    const std::size_t lt = name.find('<');
    if (lt != std::string::npos && name.back() == '>') {
      decl.name = text::collapse_spaces(std::string_view(name).substr(0, lt));
      decl.parameterized = true;
      int count = 0;
      bool digits = false;
      for (std::size_t k = lt + 1; k + 1 < name.size(); ++k) {
        if (!text::is_digit(name[k])) {
          digits = false;
          break;
        }
        digits = true;
        count = count > 100000000 ? count : count * 10 + (name[k] - '0');
      }
      decl.count = digits ? count : 0;
    } else {
      decl.name = name;
    }
    regs.push_back(std::move(decl));
  }
  return regs;
}

std::vector<std::string> body_lines(std::string_view body) {
  std::vector<std::string> lines;
  for (std::string_view line : text::split_lines(body)) {
    line = text::trim(line);
    if (!line.empty()) lines.emplace_back(line);
  }
  return lines;
}

PtxModule parse_ptx(std::string_view ptx) {
  PtxModule module;
  const std::string stripped = text::strip_comments(ptx);
  const std::string_view s = stripped;
  std::size_t pos = 0;
  while (true) {
    pos = skip_spaces(s, pos);
    if (pos >= s.size()) break;
    std::size_t line_end = s.find('\n', pos);
    if (line_end == std::string_view::npos) line_end = s.size();
    const std::string_view line = s.substr(pos, line_end - pos);

    if (text::starts_with_word(line, ".section")) {
      // ".section .debug_info" and its { ... } block (possibly on the next line).
      std::size_t next = skip_spaces(s, line_end);
      std::size_t end = line_end;
      if (next < s.size() && s[next] == '{') end = match_brace(s, next);
      else if (const std::size_t brace = line.find('{'); brace != std::string_view::npos) end = match_brace(s, pos + brace);
      module.directives.emplace_back(text::trim(s.substr(pos, end - pos)));
      pos = end;
      continue;
    }
    if (declares_function(line)) {
      const std::size_t stop = find_body_or_end(s, pos);
      PtxFunction f;
      const std::string_view header = s.substr(pos, (stop == std::string_view::npos ? s.size() : stop) - pos);
      parse_header(header, f);
      if (stop == std::string_view::npos || s[stop] == ';') {
        f.is_definition = false;
        pos = stop == std::string_view::npos ? s.size() : stop + 1;
      } else {
        int unclosed = 0;
        const std::size_t end = match_brace(s, stop, &unclosed);
        std::string_view body = s.substr(stop + 1, end - stop - 1);
        if (unclosed == 0 && !body.empty()) body.remove_suffix(1);  // the closing '}'
        f.body = body_lines(body);
        // A truncated body: close the nested blocks it left open, so that it reads the same
        // when rendered and parsed again.
        for (int i = 1; i < unclosed; ++i) f.body.emplace_back("}");
        for (const std::string& l : f.body) {
          for (RegisterDecl& r : parse_reg_declaration(l)) f.registers.push_back(std::move(r));
        }
        pos = end;
      }
      module.functions.push_back(std::move(f));
      continue;
    }
    const std::size_t end = statement_end(s, pos);
    const std::string statement = text::collapse_spaces(s.substr(pos, end - pos));
    pos = end;
    if (statement.empty() || statement == ";") continue;
    if (text::starts_with_word(statement, ".version")) {
      module.version = text::collapse_spaces(std::string_view(statement).substr(8));
    } else if (text::starts_with_word(statement, ".target")) {
      std::string_view t = std::string_view(statement).substr(7);
      t = text::trim(t.substr(0, t.find(',')));
      module.target = std::string(t);
    } else if (text::starts_with_word(statement, ".address_size")) {
      int value = 0;
      for (char c : std::string_view(statement).substr(13)) {
        if (text::is_digit(c) && value < 100000) value = value * 10 + (c - '0');
      }
      module.address_size = value;
    }
    // The one byte kjit adds to ask NVRTC for extern "C" kernels' types: no part of the user's module.
    if (compile::KernelTypes::is_added_symbol(statement)) continue;
    module.directives.push_back(statement);
  }
  return module;
}

const PtxFunction* PtxModule::find(std::string_view name) const {
  const PtxFunction* prototype = nullptr;
  for (const PtxFunction& f : functions) {
    if (f.name != name) continue;
    if (f.is_definition) return &f;
    if (!prototype) prototype = &f;
  }
  return prototype;
}

std::vector<std::string> PtxModule::kernel_names() const {
  std::vector<std::string> names;
  for (const PtxFunction& f : functions) {
    if (f.is_entry && f.is_definition) names.push_back(f.name);
  }
  return names;
}

}  // namespace kjit::inspect
