// kjit::KernelSignature: a kernel's parameters from its PTX `.param` list and its mangled name,
// and the checked packing of run-time typed arguments into them.
#include <kjit/compile_result.hpp>
#include <kjit/error.hpp>
#include <kjit/parameters.hpp>

#include "core/driver/symbols.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <optional>

#include <cstring>
#include <limits>

namespace kjit {
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

// The text between the parentheses of `.entry symbol( ... )` in `ptx`, or nullopt.
std::optional<std::string_view> entry_parameters(std::string_view ptx, std::string_view symbol) {
  std::size_t at = 0;
  while ((at = ptx.find(".entry", at)) != std::string_view::npos) {
    std::size_t name_start = at + 6;
    while (name_start < ptx.size() && (ptx[name_start] == ' ' || ptx[name_start] == '\t')) ++name_start;
    std::size_t name_end = name_start;
    while (name_end < ptx.size() && ptx[name_end] != '(' && ptx[name_end] != ' ' && ptx[name_end] != '\n' &&
           ptx[name_end] != '\t' && ptx[name_end] != '\r')
      ++name_end;
    at = name_end;
    if (ptx.substr(name_start, name_end - name_start) != symbol) continue;
    std::size_t open = ptx.find_first_not_of(" \t\r\n", name_end);
    if (open == std::string_view::npos || ptx[open] != '(') return std::string_view{};  // no parameters
    std::size_t close = ptx.find(')', open);
    if (close == std::string_view::npos) return std::nullopt;
    return ptx.substr(open + 1, close - open - 1);
  }
  return std::nullopt;
}

std::string strip_qualifiers(std::string_view type) {
  std::string out;
  for (auto t : tokens(type)) {
    if (t == "const" || t == "volatile" || t == "__restrict__" || t == "__restrict") continue;
    if (!out.empty()) out += ' ';
    out += t;
  }
  return out;
}

// What the C++ type says, where it says something the PTX does not.
std::optional<ParameterKind> cpp_kind(std::string_view type) {
  std::string t = strip_qualifiers(type);
  if (!t.empty() && t.back() == '*') return ParameterKind::pointer;
  if (t == "bool") return ParameterKind::boolean;
  if (t == "float" || t == "double") return ParameterKind::floating;
  if (t == "int" || t == "long" || t == "long long" || t == "short" || t == "signed char" || t == "char" ||
      t == "__int128" || t == "long int" || t == "short int" || t == "long long int")
    return ParameterKind::signed_integer;
  if (t.rfind("unsigned", 0) == 0 || t == "char8_t" || t == "char16_t" || t == "char32_t" || t == "wchar_t")
    return ParameterKind::unsigned_integer;
  return std::nullopt;  // a class, an enum, __half: bytes of the PTX's size
}

std::size_t ptx_scalar_size(std::string_view t) {
  if (t == ".pred") return 1;
  auto bits = std::string_view(t).substr(2);
  if (bits == "8") return 1;
  if (bits == "16") return 2;
  if (bits == "32") return 4;
  if (bits == "64") return 8;
  return 0;
}

Parameter parse_parameter(std::string_view declaration, std::size_t index) {
  Parameter p;
  p.index = index;
  bool is_ptr = false;
  auto t = tokens(declaration);
  for (std::size_t i = 0; i < t.size(); ++i) {
    std::string_view tok = t[i];
    if (tok == ".param") continue;
    if (tok == ".align" && i + 1 < t.size()) {
      p.align = static_cast<std::size_t>(std::strtoull(std::string(t[++i]).c_str(), nullptr, 10));
      continue;
    }
    if (tok == ".ptr") {
      is_ptr = true;
      continue;
    }
    if (tok.size() > 2 && tok[0] == '.' && (tok[1] == 'u' || tok[1] == 's' || tok[1] == 'b' || tok[1] == 'f') &&
        ptx_scalar_size(tok) != 0) {
      p.ptx_type = std::string(tok);
      continue;
    }
    if (tok[0] == '.') continue;  // .global, .const ... of a .ptr
    p.name = std::string(tok);
  }
  std::size_t bracket = p.name.find('[');
  std::size_t count = 1;
  if (bracket != std::string::npos) {
    count = static_cast<std::size_t>(std::strtoull(p.name.c_str() + bracket + 1, nullptr, 10));
    p.name.resize(bracket);
  }
  std::size_t scalar = ptx_scalar_size(p.ptx_type);
  p.size = scalar * count;
  if (bracket != std::string::npos) {
    p.ptx_type += fmt::format("[{}]", count);
    p.kind = ParameterKind::bytes;
  } else if (p.ptx_type[1] == 'f') {
    p.kind = ParameterKind::floating;
    p.align = std::max(p.align, scalar);
  } else {
    p.align = std::max(p.align, scalar);
    if (is_ptr) p.kind = ParameterKind::pointer;
    else if (scalar == 8) p.kind = ParameterKind::pointer_or_integer;
    else p.kind = p.ptx_type[1] == 's' ? ParameterKind::signed_integer : ParameterKind::integer;
  }
  p.type = p.ptx_type;
  return p;
}

// Refines the PTX's view with the C++ type of a mangled name.
void refine(Parameter& p, const std::string& cpp_type) {
  p.type = cpp_type;
  auto kind = cpp_kind(cpp_type);
  if (p.kind == ParameterKind::bytes || p.kind == ParameterKind::floating) {
    return;  // a struct stays bytes, a float stays floating (whatever its C++ spelling)
  }
  // An enum (or anything else the name does not settle) keeps what the PTX says; a C++ float
  // type on an integer PTX parameter cannot happen.
  if (!kind || *kind == ParameterKind::floating) return;
  p.kind = *kind;
  if (p.kind == ParameterKind::pointer) {  // "float const*": const before the outermost '*'
    std::string_view pointee = std::string_view(cpp_type).substr(0, cpp_type.rfind('*'));
    for (auto t : tokens(pointee)) p.read_only = p.read_only || t == "const";
  }
}

std::string describe(const Parameter& p) {
  return fmt::format("#{} {} ({}{})", p.index, p.type, p.name,
                     p.type == p.ptx_type ? std::string() : fmt::format(", {}", p.ptx_type));
}

}  // namespace

std::string_view to_string(ParameterKind kind) {
  switch (kind) {
    case ParameterKind::pointer: return "pointer";
    case ParameterKind::pointer_or_integer: return "pointer or 64-bit integer";
    case ParameterKind::signed_integer: return "signed integer";
    case ParameterKind::unsigned_integer: return "unsigned integer";
    case ParameterKind::integer: return "integer";
    case ParameterKind::floating: return "floating point";
    case ParameterKind::boolean: return "bool";
    case ParameterKind::bytes: return "bytes";
  }
  return "?";
}

KernelSignature::KernelSignature(std::string_view ptx, std::string symbol, std::string kernel)
    : m_kernel(std::move(kernel)), m_symbol(std::move(symbol)) {
  auto list = entry_parameters(ptx, m_symbol);
  if (!list) {
    throw UsageError(fmt::format("reading the parameters of kernel {}: its PTX has no .entry {}{}", m_kernel,
                                 m_symbol, ptx.empty() ? " (the module has no PTX: a linked cubin)" : ""));
  }
  std::size_t start = 0;
  std::size_t index = 0;
  while (start < list->size()) {
    std::size_t comma = list->find(',', start);
    if (comma == std::string_view::npos) comma = list->size();
    std::string_view one = list->substr(start, comma - start);
    if (one.find(".param") != std::string_view::npos) m_parameters.push_back(parse_parameter(one, index++));
    start = comma + 1;
  }
  if (auto types = driver::parameter_types(driver::demangle(m_symbol));
      types && types->size() == m_parameters.size() && m_symbol != driver::demangle(m_symbol)) {
    for (std::size_t i = 0; i < types->size(); ++i) refine(m_parameters[i], (*types)[i]);
  }
  std::size_t at = 0;
  for (const auto& p : m_parameters) {
    std::size_t align = std::max<std::size_t>(p.align, 1);
    at = (at + align - 1) / align * align;
    m_offsets.push_back(at);
    at += p.size;
  }
  m_buffer_bytes = at;
}

KernelSignature KernelSignature::of(const CompileResult& result, std::string_view name) {
  if (auto lowered = result.lowered_name(name)) return KernelSignature(result.ptx, *lowered, std::string(name));
  std::vector<std::string> entries, found;
  std::string_view ptx = result.ptx;
  for (std::size_t at = 0; (at = ptx.find(".entry", at)) != std::string_view::npos;) {
    auto t = tokens(ptx.substr(at + 6, std::min<std::size_t>(ptx.size() - at - 6, 4096)));
    at += 6;
    if (t.empty()) continue;
    std::string symbol(t.front().substr(0, t.front().find('(')));
    if (symbol == name) return KernelSignature(result.ptx, symbol, std::string(name));
    if (symbol.rfind("_Z", 0) == 0 && driver::plain_name(driver::demangle(symbol)) == name) found.push_back(symbol);
    entries.push_back(symbol);
  }
  if (found.size() == 1) return KernelSignature(result.ptx, found.front(), std::string(name));
  std::vector<std::string> shown;
  for (const auto& n : found.empty() ? entries : found) {
    std::string d = driver::demangle(n);
    shown.push_back(d == n ? n : fmt::format("{} ({})", d, n));
  }
  if (found.size() > 1) {
    throw UsageError(fmt::format("looking up kernel \"{}\" in program {}: the name is overloaded ({}); ask for one "
                                 "by its mangled name or a name expression", name, result.program_name,
                                 fmt::join(shown, "; ")));
  }
  throw UsageError(fmt::format("looking up kernel \"{}\" in program {}: no such kernel; it has {}{}{}", name,
                               result.program_name, shown.empty() ? "none" : "", fmt::join(shown, ", "),
                               name.find('<') != std::string_view::npos
                                   ? " (a template needs its name expression: instantiate(\"name<args>\") on the Program)" : ""));
}

namespace {

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

// The declarator names of a parameter list's text ("const float* matrix, int n = 4" -> matrix, n);
// nullopt when one has no name.
std::optional<std::vector<std::string>> declarator_names(std::string_view list) {
  std::vector<std::string> names;
  int depth = 0;
  std::size_t start = 0;
  auto one = [&](std::string_view piece) -> bool {
    if (auto eq = piece.find('='); eq != std::string_view::npos) piece = piece.substr(0, eq);
    if (auto bracket = piece.find('['); bracket != std::string_view::npos) piece = piece.substr(0, bracket);
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
    names.emplace_back(name);
    return true;
  };
  auto blank = [](std::string_view t) { return t.find_first_not_of(" \t\r\n") == std::string_view::npos; };
  if (blank(list) || tokens(list) == std::vector<std::string_view>{"void"}) return names;  // "()", "(void)"
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
  return names;
}

}  // namespace

bool KernelSignature::name_parameters(std::string_view source) {
  std::string plain = driver::plain_name(driver::demangle(m_symbol));
  if (auto lt = plain.find('<'); lt != std::string::npos) plain.resize(lt);
  if (auto colon = plain.rfind("::"); colon != std::string::npos) plain = plain.substr(colon + 2);
  if (plain.empty()) return false;
  const std::string text = without_comments(source);
  std::optional<std::vector<std::string>> chosen;
  for (std::size_t at = 0; (at = text.find(plain, at)) != std::string::npos; at += plain.size()) {
    if (at > 0 && is_identifier_char(text[at - 1])) continue;
    std::size_t open = text.find_first_not_of(" \t\r\n", at + plain.size());
    if (open == std::string::npos || text[open] != '(') continue;
    // The declaration starts after the previous ';', '}' or '{' (or a preprocessor line) and says __global__.
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
    auto names = declarator_names(std::string_view(text).substr(open + 1, close - open - 1));
    if (!names || names->size() != m_parameters.size()) continue;
    if (chosen && *chosen != *names) return false;  // overloads of one arity that name them differently
    chosen = std::move(names);
  }
  if (!chosen) return false;
  for (std::size_t i = 0; i < m_parameters.size(); ++i) m_parameters[i].source_name = (*chosen)[i];
  return true;
}

std::string KernelSignature::to_string() const {
  std::vector<std::string> shown;
  for (const auto& p : m_parameters) {
    shown.push_back(p.type == p.ptx_type ? p.type : fmt::format("{} [{}]", p.type, p.ptx_type));
  }
  return fmt::format("{}({})", m_kernel, fmt::join(shown, ", "));
}

void KernelSignature::check_count(std::size_t given) const {
  if (given == m_parameters.size()) return;
  throw ArgumentError(fmt::format("launching kernel {}: given {} argument{}, the kernel takes {}: {}", m_kernel,
                                  given, given == 1 ? "" : "s", m_parameters.size(), to_string()));
}

void KernelSignature::refuse(std::size_t index, std::string_view given, std::string_view why) const {
  const Parameter& p = m_parameters.at(index);
  throw ArgumentError(fmt::format("launching kernel {}: argument {} does not fit parameter {}: given {}{}{}; the "
                                  "kernel takes {}", m_kernel, index, describe(p), given, why.empty() ? "" : ": ",
                                  why, to_string()));
}

void KernelSignature::pack_signed(std::size_t index, std::int64_t value, void* slot) const {
  const Parameter& p = m_parameters.at(index);
  const int bits = static_cast<int>(p.size * 8);
  switch (p.kind) {
    case ParameterKind::boolean:
      if (value != 0 && value != 1) refuse(index, fmt::format("int {}", value), "a bool takes 0 or 1");
      break;
    case ParameterKind::signed_integer:
      if (bits < 64 && (value < -(std::int64_t{1} << (bits - 1)) || value >= (std::int64_t{1} << (bits - 1)))) {
        refuse(index, fmt::format("int {}", value), fmt::format("out of range for a signed {}-bit integer", bits));
      }
      break;
    case ParameterKind::unsigned_integer:
      if (value < 0) refuse(index, fmt::format("int {}", value), "negative for an unsigned integer");
      if (bits < 64 && value >= (std::int64_t{1} << bits)) {
        refuse(index, fmt::format("int {}", value), fmt::format("out of range for an unsigned {}-bit integer", bits));
      }
      break;
    case ParameterKind::integer:
    case ParameterKind::pointer_or_integer:
      if (bits < 64 && (value < -(std::int64_t{1} << (bits - 1)) || value >= (std::int64_t{1} << bits))) {
        refuse(index, fmt::format("int {}", value), fmt::format("out of range for a {}-bit integer", bits));
      }
      break;
    case ParameterKind::pointer:
      refuse(index, fmt::format("int {}", value), "a pointer parameter takes a device array (tensor) or None");
    case ParameterKind::floating:
      // An integer for a floating-point parameter converts without surprise (2 -> 2.0f).
      pack_floating(index, static_cast<double>(value), slot);
      return;
    case ParameterKind::bytes:
      refuse(index, fmt::format("int {}", value),
             fmt::format("a {}-byte by-value parameter takes bytes or a numpy scalar of that size", p.size));
  }
  std::memcpy(slot, &value, p.size);  // little-endian: the low bytes
}

void KernelSignature::pack_unsigned(std::size_t index, std::uint64_t value, void* slot) const {
  if (value <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    pack_signed(index, static_cast<std::int64_t>(value), slot);
    return;
  }
  const Parameter& p = m_parameters.at(index);
  if (p.size == 8 && (p.kind == ParameterKind::unsigned_integer || p.kind == ParameterKind::integer ||
                      p.kind == ParameterKind::pointer_or_integer)) {
    std::memcpy(slot, &value, 8);
    return;
  }
  if (p.kind == ParameterKind::floating) {
    pack_floating(index, static_cast<double>(value), slot);
    return;
  }
  refuse(index, fmt::format("int {}", value), fmt::format("out of range for {}", p.type));
}

void KernelSignature::pack_floating(std::size_t index, double value, void* slot) const {
  const Parameter& p = m_parameters.at(index);
  if (p.kind != ParameterKind::floating) {
    refuse(index, fmt::format("float {}", value),
           p.kind == ParameterKind::pointer ? "a pointer parameter takes a device array (tensor) or None"
                                            : fmt::format("a float for a {} parameter", kjit::to_string(p.kind)));
  }
  if (p.size == 4) {
    float f = static_cast<float>(value);
    std::memcpy(slot, &f, 4);
  } else {
    std::memcpy(slot, &value, 8);
  }
}

void KernelSignature::pack_boolean(std::size_t index, bool value, void* slot) const {
  const Parameter& p = m_parameters.at(index);
  if (p.kind == ParameterKind::floating || p.kind == ParameterKind::pointer || p.kind == ParameterKind::bytes) {
    refuse(index, value ? "bool True" : "bool False", fmt::format("a bool for a {} parameter", kjit::to_string(p.kind)));
  }
  pack_signed(index, value ? 1 : 0, slot);
}

void KernelSignature::pack_pointer(std::size_t index, std::uint64_t address, void* slot) const {
  const Parameter& p = m_parameters.at(index);
  if (p.kind != ParameterKind::pointer && p.kind != ParameterKind::pointer_or_integer) {
    refuse(index, "a device array (tensor)", fmt::format("a {} parameter takes a scalar", kjit::to_string(p.kind)));
  }
  std::memcpy(slot, &address, 8);
}

void KernelSignature::pack_bytes(std::size_t index, const void* data, std::size_t size, void* slot) const {
  const Parameter& p = m_parameters.at(index);
  if (size != p.size) {
    refuse(index, fmt::format("{} bytes", size), fmt::format("the parameter has {} bytes", p.size));
  }
  std::memcpy(slot, data, size);
}

}  // namespace kjit
