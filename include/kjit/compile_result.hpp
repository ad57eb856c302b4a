// kjit::CompileResult: what a compile produced (or what the cache held): PTX, the cubin when
// the arch is real, NVRTC's log, the lowered names of the name expressions, the options used,
// the cache key and how the result was obtained. Plain data; nothing here throws.
#pragma once

#include <kjit/export.hpp>

#include <kjit/compile_options.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kjit {

// How a result was obtained: from the disk cache, compiled here, or compiled by another
// thread or process that this one waited for.
// How a request was answered: from the disk cache, compiled, after waiting for another compile
// of the same key, from the fleet's remote cache, or (a Runtime::load only: Module::outcome())
// by a module this Runtime had already loaded.
enum class Outcome { hit, compiled, waited, remote_hit, registry };
KJIT_API std::string_view to_string(Outcome outcome);

// What a compile did with NVRTC's precompiled headers (RuntimeConfig::precompiled_headers):
// none (off, a cache hit, or nothing to precompile), created one, or used one.
enum class PchUse { none, created, used };
KJIT_API std::string_view to_string(PchUse pch);

class KJIT_API CompileResult {
public:
  std::string program_name;
  Arch arch = Arch::native();          // the resolved arch (never native)
  std::vector<std::string> options;    // the canonical NVRTC arguments
  std::string ptx;
  std::string cubin;                   // empty for a virtual arch (and for -dlto)
  std::string ltoir;                   // NVVM IR for link-time optimization: only with -dlto
  std::string log;                     // NVRTC's log (warnings, -Xptxas -v output)
  std::vector<std::pair<std::string, std::string>> lowered_names;  // expression -> mangled
  // extern "C" kernel -> NVRTC's lowered name of its type ("square" -> "_ZN..18__kjit_kernel_typeIPFvPKfPfiEEE"):
  // the parameter types as compiled, which the kernel's PTX name does not say (KernelSignature reads them).
  std::vector<std::pair<std::string, std::string>> kernel_types;
  std::string key;                     // cache key, 32 hex digits
  Outcome outcome = Outcome::compiled;
  double compile_ms = 0;               // NVRTC time (0 for a hit)
  PchUse pch = PchUse::none;           // precompiled headers created or used by this compile

  bool has_cubin() const noexcept { return !cubin.empty(); }
  // The mangled name NVRTC gave a name expression, or nullopt when it was not instantiated.
  std::optional<std::string> lowered_name(std::string_view name_expression) const;
};

}  // namespace kjit
