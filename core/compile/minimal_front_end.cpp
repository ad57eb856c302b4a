#include "core/compile/minimal_front_end.hpp"

#include "core/compile/standard_headers.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <mutex>
#include <unordered_set>

namespace kjit::compile {
namespace {

bool identifier_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// An identifier of a family --minimal leaves out: the runtime API and the device runtime
// (cudaMalloc, cudaError_t, cudaStream_t, cudaTextureObject_t), the driver API and the toolkit's
// version macros (CUdeviceptr, CU_..., CUDA_VERSION, CUDART_VERSION: an #if on one of them would
// silently change under --minimal), textures and surfaces (tex2D, texture<>, surf2Dwrite),
// make_cudaExtent. Over-broad on purpose: a false alarm only costs the faster front end.
bool excluded_identifier(std::string_view id) {
  if (id.starts_with("cuda") && id.size() > 4 && (std::isupper(static_cast<unsigned char>(id[4])) || id[4] == '_')) {
    return true;
  }
  return id.starts_with("CU") || id.starts_with("tex") || id.starts_with("surf") || id.starts_with("make_cuda");
}

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

// A raw string literal R"delim( ... )delim" starting at `i` (the R), or npos.
std::size_t skip_raw_string(std::string_view t, std::size_t i) {
  if (t.compare(i, 2, "R\"") != 0) return std::string_view::npos;
  const std::size_t open = t.find('(', i + 2);
  if (open == std::string_view::npos) return std::string_view::npos;
  const std::string close = ")" + std::string(t.substr(i + 2, open - i - 2)) + "\"";
  const std::size_t end = t.find(close, open + 1);
  return end == std::string_view::npos ? t.size() : end + close.size();
}

// At the start of a line's `#` (`i`): past the directive's target when it is an #include of a
// <...> or "..." header (listed elsewhere); "#include MACRO" when its target is a macro.
std::size_t skip_include(std::string_view t, std::size_t i, std::string& found) {
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
  found = "#include MACRO";
  return j;
}

// Toolkit headers that compiled to the same PTX with and without --minimal (NVRTC 13.0; the
// test compiles each). CUB, Thrust, libcu++ and cooperative groups are left out: CUB names
// cudaError_t, and their own compile time dwarfs what --minimal saves.
constexpr std::array<std::string_view, 10> k_allowed_toolkit_headers = {
    "cuda_bf16.h", "cuda_fp16.h",         "cuda_fp8.h",        "mma.h",          "vector_types.h",
    "vector_functions.h", "cuda_pipeline.h", "cuda_awbarrier.h", "sm_60_atomic_functions.h",
    "sm_61_intrinsics.h"};

std::mutex g_failed_mutex;
std::unordered_set<std::size_t>& failed_programs() {
  static auto* set = new std::unordered_set<std::size_t>();  // never destroyed: used until exit
  return *set;
}
std::atomic<bool> g_refused{false};

bool standard_header(std::string_view name) {
  const auto& files = standard_header_files();  // sorted by name
  const auto it = std::lower_bound(files.begin(), files.end(), name,
                                   [](const auto& file, std::string_view n) { return file.first < n; });
  return it != files.end() && it->first == name;
}

}  // namespace

std::string MinimalFrontEnd::excluded_name(std::string_view t) {
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
      std::string found;
      i = skip_include(t, i, found);
      if (!found.empty()) return found;
      line_start = false;
      continue;
    }
    line_start = false;
    if (c == '/' || c == '"' || (c == '\'' && !(i > 0 && identifier_char(t[i - 1])))) {  // 1'000 is a number
      const std::size_t next = skip_literal_or_comment(t, i);
      i = next > i ? next : i + 1;
      continue;
    }
    if (c == '<' && t.compare(i, 3, "<<<") == 0) return "<<<";
    if (identifier_start(c)) {
      if (const std::size_t raw = skip_raw_string(t, i); raw != std::string_view::npos) {
        i = raw;
        continue;
      }
      std::size_t j = i + 1;
      while (j < t.size() && identifier_char(t[j])) ++j;
      const std::string_view id = t.substr(i, j - i);
      if (excluded_identifier(id)) return std::string(id);
      i = j;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {  // a number's suffix is no identifier (1.0f, 0x1CU)
      while (i < t.size() && (identifier_char(t[i]) || t[i] == '.' || t[i] == '\'')) ++i;
      continue;
    }
    ++i;
  }
  return {};
}

bool MinimalFrontEnd::allowed_toolkit_header(std::string_view spelling) {
  return std::find(k_allowed_toolkit_headers.begin(), k_allowed_toolkit_headers.end(), spelling) !=
         k_allowed_toolkit_headers.end();
}

std::string MinimalFrontEnd::ruled_out(const ProgramText& text) {
  if (refused()) return "NVRTC refused --minimal earlier in this process";
  for (std::string_view a : text.arguments) {
    if (a == "--minimal" || a == "-minimal") return "the options ask for --minimal themselves";
    std::string_view value;
    if (a.starts_with("--pre-include=")) value = a.substr(14);
    else if (a.starts_with("-include") && a.size() > 8) value = a.substr(8);
    if (!value.empty() && value != k_nvcc_environment_header) return "the options pre-include " + std::string(value);
    if (a.starts_with("--define-macro=")) value = a.substr(15);
    else if (a.starts_with("-D")) value = a.substr(2);
    else continue;
    if (std::string name = excluded_name(value); !name.empty()) return "a define names " + name;
  }
  if (std::string name = excluded_name(text.source); !name.empty()) return "the source names " + name;
  for (std::string_view h : text.headers) {
    if (std::string name = excluded_name(h); !name.empty()) return "a header names " + name;
  }
  for (std::string_view spelling : text.other_includes) {
    if (!standard_header(spelling) && !allowed_toolkit_header(spelling)) {
      return "<" + std::string(spelling) + "> is a toolkit or system header";
    }
  }
  return {};
}

bool MinimalFrontEnd::failed_before(std::size_t program) {
  std::lock_guard lock(g_failed_mutex);
  return failed_programs().count(program) != 0;
}

void MinimalFrontEnd::remember_failure(std::size_t program) {
  std::lock_guard lock(g_failed_mutex);
  failed_programs().insert(program);
}

bool MinimalFrontEnd::refused() { return g_refused.load(std::memory_order_relaxed); }

void MinimalFrontEnd::remember_refused() { g_refused.store(true, std::memory_order_relaxed); }

}  // namespace kjit::compile
