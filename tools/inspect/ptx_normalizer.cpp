// normalized / normalize / to_ptx: the canonical text of a PTX module, in which builds that
// differ only in comments, debug info, whitespace or register and label numbering are equal.
#include "tools/inspect/ptx_parser.hpp"
#include "tools/inspect/ptx_text.hpp"

#include <kjit/tools/inspect.hpp>

#include <fmt/format.h>

#include <map>
#include <set>
#include <string>
#include <unordered_map>

namespace kjit::inspect {

namespace {

bool is_debug_directive(std::string_view d) {
  if (text::starts_with_word(d, ".file") || text::starts_with_word(d, ".loc")) return true;
  if (text::starts_with_word(d, ".section")) {
    const std::string_view rest = text::trim(d.substr(8));
    return rest.substr(0, 6) == ".debug";
  }
  return false;
}

// The label a line defines ("$L__BB0_2: ret;" -> "$L__BB0_2"), or empty.
std::string_view label_definition(std::string_view line) {
  const std::string_view name = text::ident_at(line, 0);
  if (name.empty()) return {};
  std::size_t pos = name.size();
  while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
  if (pos < line.size() && line[pos] == ':') return name;
  return {};
}

// Splits "%rd12" into ("rd", "12"); empty digits when it does not end in digits.
std::pair<std::string_view, std::string_view> split_register(std::string_view ident) {
  std::size_t end = ident.size();
  while (end > 0 && text::is_digit(ident[end - 1])) --end;
  return {ident.substr(0, end), ident.substr(end)};
}

bool label_token_position(std::string_view line, std::size_t i) {
  if (!text::is_ident_start(line[i])) return false;
  if (i == 0) return true;
  const char before = line[i - 1];
  return !text::is_ident_char(before) && before != '%' && before != '.';
}

class FunctionNormalizer {
public:
  explicit FunctionNormalizer(const PtxFunction& f) : m_function(f) {
    for (const RegisterDecl& r : f.registers) {
      if (r.parameterized && r.name.size() > 1 && r.name[0] == '%') m_classes.insert(r.name.substr(1));
    }
  }

  PtxFunction run() {
    std::vector<std::string> lines;
    for (const std::string& raw : m_function.body) {
      std::string line = text::collapse_spaces(raw);
      if (line.empty() || is_debug_directive(line)) continue;
      lines.push_back(std::move(line));
    }
    // Labels and how often something other than their definition names them.
    for (const std::string& line : lines) {
      const std::string_view def = label_definition(line);
      if (!def.empty()) m_references.emplace(std::string(def), 0);
    }
    for (const std::string& line : lines) {
      const std::string_view def = label_definition(line);
      for_each_label(line, def.empty() ? 0 : def.size(), [&](std::string_view name, std::size_t) {
        ++m_references[std::string(name)];
      });
    }
    PtxFunction out = m_function;
    out.body.clear();
    std::vector<std::size_t> decl_lines;
    for (const std::string& line : lines) {
      std::string_view view = line;
      const std::string_view def = label_definition(view);
      if (!def.empty() && m_references[std::string(def)] == 0) {
        view = text::trim(view.substr(view.find(':') + 1));
        if (view.empty()) continue;
      }
      if (text::starts_with_word(view, ".reg")) decl_lines.push_back(out.body.size());
      out.body.push_back(rename(view, text::starts_with_word(view, ".reg")));
    }
    // Declared counts follow the renumbering: %f<N> with N = registers used + 1.
    for (std::size_t index : decl_lines) out.body[index] = rewrite_declaration(out.body[index]);
    out.registers.clear();
    for (const std::string& line : out.body) {
      for (RegisterDecl& r : parse_reg_declaration(line)) out.registers.push_back(std::move(r));
    }
    return out;
  }

private:
  template <class Fn>
  void for_each_label(std::string_view line, std::size_t from, Fn&& fn) const {
    std::size_t i = from;
    while (i < line.size()) {
      if (label_token_position(line, i)) {
        const std::string_view ident = text::ident_at(line, i);
        if (m_references.count(std::string(ident))) fn(ident, i);
        i += ident.size();
      } else {
        ++i;
      }
    }
  }

  std::string rename(std::string_view line, bool declaration) {
    std::string out;
    out.reserve(line.size());
    std::size_t i = 0;
    while (i < line.size()) {
      const char c = line[i];
      const bool boundary = i == 0 || !text::is_ident_char(line[i - 1]);
      if (c == '%' && boundary && !declaration) {
        const std::string_view ident = text::ident_at(line, i + 1);
        const auto [prefix, digits] = split_register(ident);
        if (!ident.empty() && !digits.empty() && m_classes.count(std::string(prefix))) {
          out += '%';
          out += register_name(ident, prefix);
          i += 1 + ident.size();
          continue;
        }
        out += c;
        ++i;
        continue;
      }
      if (label_token_position(line, i)) {
        const std::string_view ident = text::ident_at(line, i);
        if (m_references.count(std::string(ident))) out += label_name(ident);
        else out += ident;
        i += ident.size();
        continue;
      }
      out += c;
      ++i;
    }
    return out;
  }

  std::string register_name(std::string_view ident, std::string_view prefix) {
    auto it = m_registers.find(std::string(ident));
    if (it == m_registers.end()) {
      const int number = ++m_class_counts[std::string(prefix)];
      it = m_registers.emplace(std::string(ident), fmt::format("{}{}", prefix, number)).first;
    }
    return it->second;
  }

  std::string label_name(std::string_view ident) {
    auto it = m_labels.find(std::string(ident));
    if (it == m_labels.end()) {
      it = m_labels.emplace(std::string(ident), fmt::format("$L{}", m_labels.size() + 1)).first;
    }
    return it->second;
  }

  std::string rewrite_declaration(const std::string& line) const {
    std::string out;
    std::size_t i = 0;
    while (i < line.size()) {
      if (line[i] == '%') {
        const std::string_view ident = text::ident_at(line, i + 1);
        const std::size_t after = i + 1 + ident.size();
        if (!ident.empty() && m_classes.count(std::string(ident)) && after < line.size() && line[after] == '<') {
          const std::size_t close = line.find('>', after);
          if (close != std::string::npos) {
            const auto count = m_class_counts.find(std::string(ident));
            out += fmt::format("%{}<{}>", ident, (count == m_class_counts.end() ? 0 : count->second) + 1);
            i = close + 1;
            continue;
          }
        }
      }
      out += line[i++];
    }
    return out;
  }

  const PtxFunction& m_function;
  std::set<std::string> m_classes;                          // "r", "rd", "f", "p", ...
  std::unordered_map<std::string, int> m_references;        // label -> uses
  std::unordered_map<std::string, std::string> m_registers; // old -> new
  std::map<std::string, int> m_class_counts;
  std::unordered_map<std::string, std::string> m_labels;
};

void render_function(std::string& out, const PtxFunction& f) {
  if (!f.linkage.empty()) out += f.linkage + ' ';
  out += f.is_entry ? ".entry " : ".func ";
  if (!f.return_params.empty()) {
    out += '(';
    for (std::size_t i = 0; i < f.return_params.size(); ++i) {
      if (i) out += ", ";
      out += f.return_params[i];
    }
    out += ") ";
  }
  out += f.name;
  out += "(\n";
  for (std::size_t i = 0; i < f.params.size(); ++i) {
    out += '\t';
    out += f.params[i];
    out += i + 1 < f.params.size() ? ",\n" : "\n";
  }
  out += ")\n";
  for (const std::string& d : f.directives) out += d + '\n';
  if (!f.is_definition) {
    out += ";\n";
    return;
  }
  out += "{\n";
  for (const std::string& line : f.body) {
    if (label_definition(line).empty()) out += '\t';
    out += line;
    out += '\n';
  }
  out += "}\n";
}

}  // namespace

PtxModule normalized(const PtxModule& module) {
  PtxModule out;
  out.version = module.version;
  out.target = module.target;
  out.address_size = module.address_size;
  for (const std::string& d : module.directives) {
    if (!is_debug_directive(d)) out.directives.push_back(text::collapse_spaces(d));
  }
  for (const PtxFunction& f : module.functions) {
    PtxFunction g = FunctionNormalizer(f).run();
    for (std::string& p : g.params) p = text::collapse_spaces(p);
    for (std::string& p : g.return_params) p = text::collapse_spaces(p);
    out.functions.push_back(std::move(g));
  }
  return out;
}

std::string to_ptx(const PtxModule& module) {
  std::string out;
  for (const std::string& d : module.directives) {
    out += d;
    out += '\n';
  }
  for (const PtxFunction& f : module.functions) {
    out += '\n';
    render_function(out, f);
  }
  return out;
}

std::string normalize(std::string_view ptx) { return to_ptx(normalized(parse_ptx(ptx))); }

// Used by the diff: the lines of one function as to_ptx renders it.
std::vector<std::string> function_lines(const PtxFunction& f) {
  std::string text;
  render_function(text, f);
  std::vector<std::string> lines;
  for (std::string_view line : text::split_lines(text)) lines.emplace_back(line);
  return lines;
}

}  // namespace kjit::inspect
