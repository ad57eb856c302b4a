#include "core/compile/minimal_front_end.hpp"

#include "core/compile/source/lexer.hpp"
#include "core/compile/source_scan.hpp"
#include "core/compile/standard_headers.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <string>
#include <mutex>
#include <unordered_set>

namespace kjit::compile {
namespace {

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

// Names the implementation reserves whose definition is the same with --minimal and without the
// nvcc environment's pre-include (checked by tests/unit/test_compile_minimal_front_end.cpp): a
// conditional on one of these cannot tell the paths apart.
constexpr std::array<std::string_view, 18> k_stable_reserved = {
    "__CUDA_ARCH__", "__CUDACC__", "__NVCC__", "__CUDACC_RTC__", "__cplusplus", "__CUDACC_VER_MAJOR__",
    "__CUDACC_VER_MINOR__", "__CUDACC_VER_BUILD__", "__CUDACC_RDC__", "__CUDACC_EWP__", "__CUDACC_DEBUG__",
    "__CUDA_ARCH_LIST__", "__CUDA_ARCH_SPECIFIC__", "__CUDA_ARCH_FAMILY_SPECIFIC__", "__FILE__", "__LINE__",
    "__COUNTER__", "__STDC__"};

bool reserved(std::string_view name) {
  return name.size() >= 2 && name[0] == '_' && (name[1] == '_' || (name[1] >= 'A' && name[1] <= 'Z'));
}

}  // namespace

std::string MinimalFrontEnd::observing_construct(std::string_view text) {
  const std::vector<Token> tokens = lex(text);
  std::string directive;  // the directive of the line being read
  for (std::size_t k = 0; k < tokens.size(); ++k) {
    const Token& t = tokens[k];
    if (t.line_start) directive = t.directive ? directive_name(text, tokens, k) : std::string();
    if (t.kind == TokenKind::punctuator && t.is(text, "##")) return "token pasting (##) can build any name";
    if (t.kind != TokenKind::identifier) continue;
    const std::string name = spelling(text, t);
    if (t.spliced) return "the name " + name + " is split by a line splice";
    if (name == "__has_include" || name == "__has_include_next") return "it asks " + name;
    if (name == "__CUDACC_RTC_MINIMAL__") return "it names __CUDACC_RTC_MINIMAL__";
    const bool conditional = directive == "if" || directive == "ifdef" || directive == "ifndef" ||
                             directive == "elif" || directive == "elifdef" || directive == "elifndef";
    if (conditional && reserved(name) &&
        std::find(k_stable_reserved.begin(), k_stable_reserved.end(), name) == k_stable_reserved.end()) {
      return "a conditional asks for the reserved name " + name;
    }
  }
  return {};
}

std::string MinimalFrontEnd::excluded_name(std::string_view text) {
  return std::string(first_name(text, [](std::string_view name) {
    return name == k_device_launch || name == k_macro_include || excluded_identifier(name);
  }));
}

bool MinimalFrontEnd::allowed_toolkit_header(std::string_view spelling) {
  return std::find(k_allowed_toolkit_headers.begin(), k_allowed_toolkit_headers.end(), spelling) !=
         k_allowed_toolkit_headers.end();
}

std::string MinimalFrontEnd::ruled_out(const ProgramText& text) {
  if (refused()) return "NVRTC refused --minimal earlier in this process";
  const std::string environment = "--pre-include=" + std::string(k_nvcc_environment_header);
  for (std::size_t i = 0; i < text.arguments.size(); ++i) {
    const std::string_view a = text.arguments[i];
    if (a == "--minimal" || a == "-minimal") return "the options ask for --minimal themselves";
    if ((a.starts_with("--pre-include") || a.starts_with("-include")) && a != environment) {
      return "the options pre-include a header (" + std::string(a) + ")";
    }
    std::string_view define;
    if (a == "-D" || a == "--define-macro") define = i + 1 < text.arguments.size() ? text.arguments[++i] : "";
    else if (a.starts_with("--define-macro=")) define = a.substr(15);
    else if (a.starts_with("-D")) define = a.substr(2);
    if (std::string name = excluded_name(define); !name.empty()) return "a define names " + name;
    if (std::string why = observing_construct(define); !why.empty()) return "a define: " + why;
  }
  if (std::string name = excluded_name(text.source); !name.empty()) return "the source names " + name;
  if (std::string why = observing_construct(text.source); !why.empty()) return "the source: " + why;
  for (std::string_view h : text.headers) {
    if (std::string name = excluded_name(h); !name.empty()) return "a header names " + name;
    if (std::string why = observing_construct(h); !why.empty()) return "a header: " + why;
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
