#include "core/compile/toolkit_headers.hpp"

#include "core/base/source_file.hpp"
#include "core/compile/nvrtc_compiler.hpp"
#include "core/compile/source/lexer.hpp"

#include <algorithm>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace kjit::compile {
namespace {

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// Past the parenthesis or brace that closes the one at `open`, or npos.
std::size_t past_closing(std::string_view t, std::size_t open, char opening, char closing) {
  int depth = 0;
  for (std::size_t p = open; p < t.size(); ++p) {
    if (t[p] == opening) ++depth;
    if (t[p] == closing && --depth == 0) return p + 1;
  }
  return std::string_view::npos;
}

bool is_macro_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// When a host function starts at `pos` (the first character of a statement): the end of its
// declaration (past the ';') or definition (past the '}'). A declaration names one of the API
// macros before its name ("CUresult CUDAAPI cuInit(unsigned int Flags);", also over two lines,
// also after __CUDA_DEPRECATED or CUSPARSE_DEPRECATED(cusparseSpMV)); a definition is
// "static inline ... name(...) { ... }".
std::optional<std::size_t> host_function_end(std::string_view t, std::size_t pos,
                                             std::span<const std::string_view> api_macros) {
  std::size_t p = pos;
  bool api = false, is_static = false, is_inline = false;
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
    } else if (t[p] == '*' || t[p] == '&') {
      ++p;
    } else if (is_ident_start(t[p])) {
      const std::size_t start = p;
      while (p < t.size() && is_ident(t[p])) ++p;
      last = t.substr(start, p - start);
      if (names == 0 && last == "static") is_static = true;
      if (last == "inline" || last == "__inline__") is_inline = true;
      if (std::find(api_macros.begin(), api_macros.end(), last) != api_macros.end()) api = true;
      ++names;
      // An annotation macro with arguments before the API macro: DEPRECATED(replacement).
      std::size_t q = p;
      while (q < t.size() && is_blank(t[q])) ++q;
      if (!api && q < t.size() && t[q] == '(' && is_macro_name(last)) {
        const std::size_t close = past_closing(t, q, '(', ')');
        if (close == std::string_view::npos) return std::nullopt;
        p = close;
        last = {};
      }
    } else {
      break;
    }
  }
  if (p >= t.size() || t[p] != '(' || names < 2 || last.empty()) return std::nullopt;
  if (std::find(api_macros.begin(), api_macros.end(), last) != api_macros.end()) return std::nullopt;
  if (!api && !(is_static && is_inline)) return std::nullopt;
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

std::string host_api_types(std::string_view header, std::span<const std::string_view> api_macros) {
  const std::string t = without_comments(header);
  std::string out = "// kjit: the toolkit's header for device code: its types and macros, without comments and\n"
                    "// without its host functions (NVRTC refuses host declarations).\n";
  out.reserve(t.size() + out.size());
  std::size_t i = 0;
  bool blank_before = false;
  while (i < t.size()) {
    std::size_t first = i;
    while (first < t.size() && is_blank(t[first])) ++first;
    std::size_t line_end = t.find('\n', i);
    if (line_end == std::string::npos) line_end = t.size();
    if (first < t.size() && t[first] != '#' && t[first] != '\n') {
      if (auto end = host_function_end(t, first, api_macros)) {
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

namespace {

// A toolkit header and the macro its API functions are declared with.
struct ApiHeader {
  std::string_view name;
  std::string_view api_macro;
};

// Headers that include one another travel together: what a group's member includes is in it.
struct HeaderGroup {
  std::vector<ApiHeader> headers;
};

const std::vector<HeaderGroup>& header_groups() {
  static const std::vector<HeaderGroup> groups = {
      {{{"cuda.h", "CUDAAPI"}}},
      {{{"cublas_v2.h", "CUBLASWINAPI"}, {"cublas_api.h", "CUBLASWINAPI"}, {"cublas.h", "CUBLASWINAPI"},
        {"cublasLt.h", "CUBLASWINAPI"}, {"cublasXt.h", "CUBLASWINAPI"},
        {"cusolverDn.h", "CUSOLVERAPI"}, {"cusolver_common.h", "CUSOLVERAPI"}}},
      {{{"curand.h", "CURANDAPI"}}},
      {{{"cufft.h", "CUFFTAPI"}, {"cufftXt.h", "CUFFTAPI"}}},
      {{{"cusparse.h", "CUSPARSEAPI"}}},
      {{{"cudnn.h", "CUDNNWINAPI"}, {"cudnn_version.h", "CUDNNWINAPI"}, {"cudnn_graph.h", "CUDNNWINAPI"},
        {"cudnn_ops.h", "CUDNNWINAPI"}, {"cudnn_adv.h", "CUDNNWINAPI"}, {"cudnn_cnn.h", "CUDNNWINAPI"},
        {"cudnn_backend.h", "CUDNNWINAPI"}}},
      // No API macro: CUB's umbrella, less its host-side parts (device_side_umbrella).
      {{{"cub/cub.cuh", ""}}},
  };
  return groups;
}

// One group's filtered headers, made on first use (under the once flag) and kept for the process.
struct GroupTexts {
  std::once_flag once;
  std::vector<std::pair<std::string, std::string>> texts;  // (name, filtered content)
};

void make_group(const HeaderGroup& group, GroupTexts& out) {
  // The API macros of the whole group: a header may declare with another member's macro.
  std::vector<std::string_view> macros;
  for (const auto& h : group.headers) {
    if (std::find(macros.begin(), macros.end(), h.api_macro) == macros.end()) macros.push_back(h.api_macro);
  }
  for (const auto& h : group.headers) {
    for (const auto& dir : NvrtcCompiler::toolkit_include_dirs()) {
      system::FileContent f = base::read_source_file(dir / h.name);
      if (!f.ok()) continue;
      out.texts.emplace_back(std::string(h.name),
                             h.api_macro.empty() ? device_side_umbrella(f.bytes) : host_api_types(f.bytes, macros));
      break;
    }
  }
}

}  // namespace

std::string device_side_umbrella(std::string_view header) {
  std::string out =
      "// kjit: the toolkit's <cub/cub.cuh> less its host-side parts: the device-wide algorithms\n"
      "// (<cub/device/...>: cub::DeviceReduce, ... launch kernels from the host, which NVRTC has not)\n"
      "// and the caching allocator. The block, warp, thread, grid and iterator headers are all here.\n";
  std::size_t i = 0;
  while (i < header.size()) {
    std::size_t end = header.find('\n', i);
    end = end == std::string_view::npos ? header.size() : end + 1;
    const std::string_view line = header.substr(i, end - i);
    const std::size_t first = line.find_first_not_of(" \t");
    const std::string_view directive = first == std::string_view::npos ? std::string_view() : line.substr(first);
    const bool host_side = directive.starts_with("#include <cub/device/") ||
                           directive.starts_with("#include <cub/util_allocator.cuh>");
    if (!host_side) out.append(line);
    i = end;
  }
  return out;
}

std::vector<std::pair<std::string_view, std::string_view>> toolkit_headers(const std::set<std::string>& requested) {
  const auto& groups = header_groups();
  static std::vector<GroupTexts> made(groups.size());
  std::vector<std::pair<std::string_view, std::string_view>> out;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const bool wanted = std::any_of(groups[g].headers.begin(), groups[g].headers.end(),
                                    [&](const ApiHeader& h) { return requested.count(std::string(h.name)) > 0; });
    if (!wanted) continue;
    std::call_once(made[g].once, [&] { make_group(groups[g], made[g]); });
    for (const auto& [name, text] : made[g].texts) out.emplace_back(name, text);
  }
  return out;
}

std::vector<std::string_view> toolkit_header_names() {
  std::vector<std::string_view> names;
  for (const auto& group : header_groups()) {
    for (const auto& h : group.headers) names.push_back(h.name);
  }
  return names;
}

}  // namespace kjit::compile
