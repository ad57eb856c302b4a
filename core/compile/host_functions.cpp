#include "core/compile/host_functions.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>
#include <utility>

namespace kjit::compile {
namespace {

constexpr std::string_view k_host_function_error =
    "A function without execution space annotations (__host__/__device__/__global__) is considered a host function";

bool is_identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// From the function's name at `pos` in `text`: true for a definition, false for a declaration,
// nullopt when the text ends first.
std::optional<bool> ends_as_definition(std::string_view text, std::size_t pos) {
  while (pos < text.size() && (is_identifier_char(text[pos]) || text[pos] == ':' || text[pos] == '~')) ++pos;
  while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
  if (pos >= text.size() || text[pos] != '(') return std::nullopt;
  int depth = 0;
  for (; pos < text.size(); ++pos) {
    if (text[pos] == '(') ++depth;
    if (text[pos] == ')' && --depth == 0) break;
  }
  if (pos >= text.size()) return std::nullopt;
  // Past the parameters: qualifiers, a trailing return type, "= 0", "= default" ... up to ';' or '{'.
  for (++pos; pos < text.size(); ++pos) {
    const char c = text[pos];
    if (c == ';') return false;
    if (c == '{') return true;
    if (c == ':' && pos + 1 < text.size() && text[pos + 1] != ':') return true;  // a constructor's initializers
    if (c == ':') ++pos;  // "::" in a trailing return type
  }
  return std::nullopt;
}

// Line `line` (1-based) of `text` onwards.
std::string_view from_line(std::string_view text, int line) {
  std::size_t pos = 0;
  for (int l = 1; l < line && pos != std::string_view::npos; ++l) {
    pos = text.find('\n', pos);
    if (pos != std::string_view::npos) ++pos;
  }
  return pos == std::string_view::npos ? std::string_view() : text.substr(pos);
}

// Past a comment, string or character literal starting at `pos` (or `pos` itself when none does).
std::size_t skip_literal(std::string_view t, std::size_t pos) {
  if (t.compare(pos, 2, "//") == 0) {
    const std::size_t end = t.find('\n', pos);
    return end == std::string_view::npos ? t.size() : end;
  }
  if (t.compare(pos, 2, "/*") == 0) {
    const std::size_t end = t.find("*/", pos + 2);
    return end == std::string_view::npos ? t.size() : end + 2;
  }
  if (t[pos] == '"' || t[pos] == '\'') {
    const char quote = t[pos];
    for (std::size_t i = pos + 1; i < t.size(); ++i) {
      if (t[i] == '\\') ++i;
      else if (t[i] == quote || t[i] == '\n') return i + 1;
    }
    return t.size();
  }
  return pos;
}

// The body of the function named `name` on line `line` of `source`: [open brace, closing brace].
std::optional<std::pair<std::size_t, std::size_t>> body_of(std::string_view source, int line, std::string_view name) {
  const std::string_view rest = from_line(source, line);
  if (rest.empty() || name.empty()) return std::nullopt;
  const std::size_t line_start = source.size() - rest.size();
  const std::string_view text = rest.substr(0, rest.find('\n'));
  std::size_t at = 0;
  for (at = text.find(name); at != std::string_view::npos; at = text.find(name, at + 1)) {
    const bool starts = at == 0 || !is_identifier_char(text[at - 1]);
    const bool ends = at + name.size() >= text.size() || !is_identifier_char(text[at + name.size()]);
    if (starts && ends) break;
  }
  if (at == std::string_view::npos) return std::nullopt;
  // To the first '{' outside parentheses; a ';' first is a declaration.
  int parens = 0;
  std::size_t pos = line_start + at + name.size();
  std::optional<std::size_t> open;
  while (pos < source.size() && !open) {
    if (const std::size_t past = skip_literal(source, pos); past != pos) {
      pos = past;
      continue;
    }
    const char c = source[pos];
    if (c == '(') ++parens;
    else if (c == ')') --parens;
    else if (c == ';' && parens == 0) return std::nullopt;
    else if (c == '{' && parens == 0) open = pos;
    ++pos;
  }
  if (!open) return std::nullopt;
  int depth = 0;
  for (pos = *open; pos < source.size();) {
    if (const std::size_t past = skip_literal(source, pos); past != pos) {
      pos = past;
      continue;
    }
    if (source[pos] == '{') ++depth;
    if (source[pos] == '}' && --depth == 0) return std::make_pair(*open, pos);
    ++pos;
  }
  return std::nullopt;
}

std::string_view next_line(std::string_view log, std::size_t& pos) {
  if (pos >= log.size()) return {};
  std::size_t end = log.find('\n', pos);
  if (end == std::string_view::npos) end = log.size();
  std::string_view line = log.substr(pos, end - pos);
  pos = end + 1;
  return line;
}

}  // namespace

HostFunctionErrors find_host_functions(
    std::string_view log, const std::function<std::optional<std::string>(const std::string&)>& source_of) {
  HostFunctionErrors out;
  bool other_error = false;
  std::size_t pos = 0;
  while (pos < log.size()) {
    std::string_view line = next_line(log, pos);
    const std::size_t err = line.find("): error: ");
    if (err == std::string_view::npos) {
      if (line.find("catastrophic error") != std::string_view::npos) other_error = true;
      continue;
    }
    const std::size_t open = line.rfind('(', err);
    if (open == std::string_view::npos || line.substr(err + 10).find(k_host_function_error) != 0) {
      other_error = true;
      continue;
    }
    HostFunction f;
    f.file = std::string(line.substr(0, open));
    f.line = std::atoi(std::string(line.substr(open + 1, err - open - 1)).c_str());
    // NVRTC prints the source line (indented by two) and a caret under the name.
    std::size_t peek = pos;
    const std::string_view excerpt = next_line(log, peek);
    const std::string_view caret = next_line(log, peek);
    const std::size_t column = caret.find('^');
    std::optional<bool> definition;
    if (column != std::string_view::npos && column < excerpt.size()) {
      pos = peek;
      std::size_t end = column;
      while (end < excerpt.size() && is_identifier_char(excerpt[end])) ++end;
      f.name = std::string(excerpt.substr(column, end - column));
      f.is_constexpr = excerpt.substr(0, column).find("constexpr") != std::string_view::npos;
      definition = ends_as_definition(excerpt, column);
      if (!definition) {
        if (auto text = source_of(f.file)) {
          std::string_view rest = from_line(*text, f.line);
          if (column >= 2 && rest.size() >= column - 2) definition = ends_as_definition(rest, column - 2);
        }
      }
    }
    // Unknown: taken as a definition, so that nothing is compiled as device code on a guess.
    f.definition = definition.value_or(true);
    out.functions.push_back(std::move(f));
  }
  out.only_these = !other_error && !out.functions.empty();
  return out;
}

namespace {

// A file of CCCL's host code: CUB's device-wide algorithms and their dispatch, Thrust's.
bool is_cccl_host_file(std::string_view file) {
  return file.find("/cub/device/") != std::string_view::npos || file.find("/thrust/") != std::string_view::npos ||
         file.starts_with("cub/device/") || file.starts_with("thrust/");
}

}  // namespace

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

std::optional<std::string> without_host_definitions(std::string_view source, std::string_view file,
                                                    const std::vector<HostFunction>& functions) {
  std::string out(source);
  bool changed = false;
  for (const HostFunction& f : functions) {
    if (!f.definition || f.is_constexpr || f.file != file) continue;
    const auto body = body_of(out, f.line, f.name);
    if (!body) return std::nullopt;  // one that cannot be found: the program as it is
    out[body->first] = ';';
    for (std::size_t i = body->first + 1; i <= body->second; ++i) {
      if (out[i] != '\n') out[i] = ' ';
    }
    changed = true;
  }
  if (!changed) return std::nullopt;
  return out;
}

std::string explain_host_definitions_left_out(const std::vector<HostFunction>& functions, std::string_view file) {
  std::string list;
  for (const auto& f : functions) {
    if (!f.definition || f.is_constexpr || f.file != file) continue;
    list += fmt::format("{}{} ({}:{})", list.empty() ? "" : ", ", f.name, f.file, f.line);
  }
  return fmt::format("kjit: host code left out: {} defined without __device__, so nvcc compiles {} for the host only; "
                     "the kernels compiled without {} (a kernel that called one would not compile)\n",
                     list, list.find(',') == std::string::npos ? "it" : "them",
                     list.find(',') == std::string::npos ? "it" : "them");
}

std::string explain_host_definitions(const std::vector<HostFunction>& functions) {
  std::string list;
  for (const auto& f : functions) {
    if (!f.definition || f.is_constexpr || is_cccl_host_file(f.file)) continue;  // CCCL's: explain_cccl_host_code
    list += fmt::format("\n  {} ({}:{})", f.name.empty() ? std::string("a function") : f.name, f.file, f.line);
  }
  if (list.empty()) return {};
  return fmt::format(
      "kjit: these functions are defined without __device__, so they are host functions, which nvcc would "
      "compile for the host; NVRTC compiles device code only and refuses them:{}\n"
      "kjit: keep host code (main, its headers, the CUDA runtime calls) out of NVRTC's sight with "
      "#ifndef __CUDACC_RTC__ ... #endif around it (NVRTC defines __CUDACC_RTC__, nvcc does not: the file still "
      "builds with nvcc), annotate a function __device__ (or __host__ __device__) to call it from a kernel, or "
      "move host code out of the kernel file.\n",
      list);
}

std::string explain_host_declarations(const std::vector<HostFunction>& functions) {
  std::string list;
  for (const auto& f : functions) list += fmt::format("{}{}", list.empty() ? "" : ", ", f.name.empty() ? "?" : f.name);
  return fmt::format("kjit: functions without __device__ ({}) compiled as device functions (-default-device): "
                     "nvcc compiles them for the host, and NVRTC has no host.\n",
                     list);
}

}  // namespace kjit::compile
