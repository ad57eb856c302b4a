// kjit::KernelSignature: a kernel's parameters from its PTX `.param` list and its mangled name,
// and the checked packing of run-time typed arguments into them.
#include <kjit/compile_result.hpp>
#include <kjit/error.hpp>
#include <kjit/parameters.hpp>

#include "core/compile/kernel_types.hpp"
#include "core/compile/source/kernel_declarations.hpp"
#include "core/driver/symbols.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
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

// A C++ parameter type taken apart: its base words (qualifiers dropped), how many pointers deep
// it is, and whether what the outermost pointer points to is const.
struct TypeShape {
  std::vector<std::string> words;
  int pointers = 0;
  bool pointee_const = false;
};

TypeShape shape_of(std::string_view type) {
  TypeShape shape;
  std::string spaced;
  for (char c : type) {
    if (c == '*' || c == '&') {
      spaced += ' ';
      spaced += c;
      spaced += ' ';
    } else {
      spaced += c;
    }
  }
  bool const_since_star = false, any_const = false;
  for (auto t : tokens(spaced)) {
    if (t == "*") {
      ++shape.pointers;
      shape.pointee_const = any_const;
      const_since_star = false;
      continue;
    }
    if (t == "const") {
      const_since_star = true;
      any_const = true;
      continue;
    }
    if (t == "volatile" || t == "__restrict__" || t == "__restrict" || t == "&" || t == "struct" ||
        t == "class" || t == "enum" || t == "typename")
      continue;
    if (t.rfind("std::", 0) == 0) t.remove_prefix(5);
    if (t.rfind("::", 0) == 0) t.remove_prefix(2);
    shape.words.emplace_back(t);
  }
  (void)const_since_star;
  return shape;
}

// Base words in one order ("long unsigned int" -> "unsigned long"), as the demangler prints them.
std::string canonical(const std::vector<std::string>& words) {
  int longs = 0, shorts = 0;
  bool is_unsigned = false, is_signed = false, is_int = false, is_char = false;
  std::string other;
  for (const auto& w : words) {
    if (w == "long") ++longs;
    else if (w == "short") ++shorts;
    else if (w == "unsigned") is_unsigned = true;
    else if (w == "signed") is_signed = true;
    else if (w == "int") is_int = true;
    else if (w == "char") is_char = true;
    else other += (other.empty() ? "" : " ") + w;
  }
  if (!other.empty()) return longs || shorts || is_unsigned || is_signed || is_int || is_char ? "" : other;
  if (is_char) return is_unsigned ? "unsigned char" : is_signed ? "signed char" : "char";
  std::string base = shorts ? "short" : longs >= 2 ? "long long" : longs == 1 ? "long" : "int";
  return is_unsigned ? "unsigned " + base : base;
}

// The element type of a canonical C++ spelling ("float", "unsigned long", "__half"): the rows of
// element_types(), each spelling canonicalized as a parameter's type is.
std::optional<ElementType> table_type(std::string_view canonical_name);

// A parameter type resolved to the table's words: its canonical base ("float", "unsigned long")
// and pointer depth; `unresolved` names the word that is in no row (a struct) and is empty when
// the base is in the table or names a kind.
struct Resolved {
  std::string base;
  int pointers = 0;
  bool pointee_const = false;
  std::string unresolved;
};

Resolved resolve(std::string_view type) {
  TypeShape shape = shape_of(type);
  Resolved r{canonical(shape.words), shape.pointers, shape.pointee_const, {}};
  if (!table_type(r.base) && !cpp_kind(r.base)) r.unresolved = r.base.empty() ? std::string(type) : r.base;
  return r;
}

std::optional<ElementType> table_type(std::string_view canonical_name) {
  static const std::vector<std::pair<std::string, ElementType>> spellings = [] {
    std::vector<std::pair<std::string, ElementType>> out{{"void", ElementType::any}};
    for (const ElementTypeRow& row : element_types()) {
      std::string_view list = row.cpp;
      while (!list.empty()) {
        const std::size_t comma = list.find(", ");
        out.emplace_back(canonical(shape_of(list.substr(0, comma)).words), row.type);
        list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 2);
      }
    }
    return out;
  }();
  for (const auto& [name, type] : spellings) {
    if (name == canonical_name) return type;
  }
  return std::nullopt;
}

// The element of a pointer of resolved type `r`, with the note that says why when unchecked.
void set_element(Parameter& p, const Resolved& r) {
  p.element = ElementType::unchecked;
  p.element_note.clear();
  if (r.pointers > 1) {
    p.element_note = "a pointer to a pointer: unchecked";
  } else if (auto e = table_type(r.base)) {
    p.element = *e;
  } else {
    p.element_note = fmt::format("{}: a struct or a type outside kjit's table: unchecked", r.base);
  }
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

// Refines the PTX's view with the C++ type the compiler gives: a mangled name's, or for an
// extern "C" kernel the lowered name of its type query (compile::KernelTypes).
void refine(Parameter& p, const std::string& spelled) {
  p.type = spelled;
  if (p.kind == ParameterKind::bytes || p.kind == ParameterKind::floating) {
    return;  // a struct stays bytes, a float stays floating (whatever its C++ spelling)
  }
  const Resolved r = resolve(spelled);
  if (r.pointers > 0) {
    if (p.size != 8) return;  // not what the PTX passes
    p.kind = ParameterKind::pointer;
    p.read_only = r.pointee_const;  // "float const*": const before the outermost '*'
    set_element(p, r);
    return;
  }
  // An enum (or anything else the name does not settle) keeps what the PTX says; a C++ float
  // type on an integer PTX parameter cannot happen.
  auto kind = r.unresolved.empty() ? cpp_kind(r.base) : std::nullopt;
  if (!kind || *kind == ParameterKind::floating || *kind == ParameterKind::pointer) return;
  p.kind = *kind;
}

std::string describe(const Parameter& p) {
  return fmt::format("#{} {}{}{} ({}{})", p.index, p.type, p.source_name.empty() ? "" : " ", p.source_name, p.name,
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

std::optional<ElementType> element_type_of(std::string_view cpp_type) {
  const Resolved r = resolve(cpp_type);
  if (r.pointers != 0 || !r.unresolved.empty()) return std::nullopt;
  return table_type(r.base);
}

namespace {

// Integers of one width and either signedness (int32 and uint32).
bool same_width_integers(ElementType a, ElementType b) {
  auto width = [](ElementType e) {
    switch (e) {
      case ElementType::int8: case ElementType::uint8: return 1;
      case ElementType::int16: case ElementType::uint16: return 2;
      case ElementType::int32: case ElementType::uint32: return 4;
      case ElementType::int64: case ElementType::uint64: return 8;
      default: return 0;
    }
  };
  return width(a) != 0 && width(a) == width(b);
}

}  // namespace

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
  KernelSignature s = find(result, name);
  s.add_compiled_types(result);
  return s;
}

void KernelSignature::add_compiled_types(const CompileResult& result) {
  if (driver::demangle(m_symbol) != m_symbol) return;  // a C++ kernel: its mangled name said them
  const auto found = std::find_if(result.kernel_types.begin(), result.kernel_types.end(),
                                  [this](const auto& t) { return t.first == m_symbol; });
  std::optional<std::vector<std::string>> types;
  if (found != result.kernel_types.end()) types = compile::KernelTypes::parameter_types(found->second);
  if (types && types->size() == m_parameters.size()) {
    for (std::size_t i = 0; i < types->size(); ++i) refine(m_parameters[i], (*types)[i]);
    return;
  }
  const std::string why =
      found == result.kernel_types.end()
          ? "NVRTC was not asked its type (an extern \"C\" kernel kjit did not find declared: made by a "
            "function-like macro, or compiled below C++14, or a compile that failed with the question): unchecked"
          : "NVRTC's type for it does not match its PTX: unchecked";
  for (Parameter& p : m_parameters) {
    if (p.kind == ParameterKind::pointer_or_integer) p.element_note = why;
  }
}

KernelSignature KernelSignature::find(const CompileResult& result, std::string_view name) {
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

bool KernelSignature::read_declaration(std::string_view source) {
  const std::string demangled = driver::demangle(m_symbol);
  std::string plain = driver::plain_name(demangled);
  if (auto lt = plain.find('<'); lt != std::string::npos) plain.resize(lt);
  if (auto colon = plain.rfind("::"); colon != std::string::npos) plain = plain.substr(colon + 2);
  if (plain.empty()) return false;
  // The names only: a type is the compiler's (the mangled name, or NVRTC's lowered name of an
  // extern "C" kernel's type), never the text's.
  const auto found = compile::KernelDeclarations(source).parameters(plain, m_parameters.size());
  if (!found) return false;
  for (std::size_t i = 0; i < m_parameters.size(); ++i) m_parameters[i].source_name = (*found)[i].name;
  return true;
}

std::string KernelSignature::to_string() const {
  std::vector<std::string> shown;
  for (const auto& p : m_parameters) {
    std::string one = p.type == p.ptx_type ? p.type : fmt::format("{} [{}]", p.type, p.ptx_type);
    if (!p.element_note.empty()) one += fmt::format(" [{}]", p.element_note);
    shown.push_back(std::move(one));
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

void KernelSignature::check_element(std::size_t index, ElementType given, std::int64_t last_dimension,
                                    std::string_view shown) const {
  if (fits(index, given)) return;
  const Parameter& p = m_parameters.at(index);
  const ElementType lane = lane_type(p.element);
  if (lane != p.element && given == lane && last_dimension == 2) return;  // float32 [..., 2] for float2
  if (same_width_integers(p.element, given)) return;  // int32 for unsigned*: torch has few unsigned dtypes
  const std::string pairs = lane != p.element ? fmt::format(" (or {} whose last dimension is 2)", kjit::to_string(lane)) : "";
  refuse(index, fmt::format("{} elements ({})", kjit::to_string(given), shown),
         fmt::format("the kernel takes {} elements{}; convert it (x.to({}) in torch), or pass kjit.raw(x) to hand "
                     "over its bytes as they are", kjit::to_string(p.element), pairs, kjit::to_string(lane)));
}

void KernelSignature::refuse_layout(std::size_t index, std::string_view what, std::string_view layout) const {
  refuse(index, fmt::format("a non-contiguous {}: {}", what, layout),
         "the kernel gets the data pointer alone and reads it as dense; pass x.contiguous(), or strided=True on "
         "launch() or kjit.torch.op() when the kernel takes the strides itself");
}

void KernelSignature::pack_bytes(std::size_t index, const void* data, std::size_t size, void* slot) const {
  const Parameter& p = m_parameters.at(index);
  if (size != p.size) {
    refuse(index, fmt::format("{} bytes", size), fmt::format("the parameter has {} bytes", p.size));
  }
  std::memcpy(slot, data, size);
}

}  // namespace kjit
