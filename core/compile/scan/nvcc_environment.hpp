// kjit::compile::NvccEnvironment: whether a program can need kjit's nvcc environment
// (__kjit_nvcc.h, pre-included by CompileOptions::nvcc_environment: math functions and their
// std:: forms, M_PI, INFINITY, FLT_MAX, uint, ...). A program with no #include that names none
// of what the environment declares compiles to the same PTX without it, so the fast path leaves
// the pre-include (and kjit's in-memory headers, which nothing can then open) out of its NVRTC
// call, never out of the canonical options or the key. The names are read once from the
// environment's own headers. Never throws.
#pragma once

#include <string>
#include <string_view>

namespace kjit::compile {

class NvccEnvironment {
public:
  // The first name of `text` (comments and literals passed over) that the nvcc environment
  // declares or defines, or "" when `text` names none of them.
  static std::string name_used(std::string_view text);

  // nvcc's implicit cuda_runtime.h also brings the device runtime API (cuda_device_runtime_api.h:
  // programmatic dependent launch, conditional graph nodes), which NVRTC lacks: the first name an
  // `identifier "X" is undefined` error of NVRTC's `log` gives that the toolkit's
  // cuda_device_runtime_api.h declares, or "" (NvrtcCompiler then pre-includes
  // k_device_runtime_header and compiles again).
  static std::string device_runtime_name(std::string_view log);
};

// kjit's header that brings the toolkit's cuda_device_runtime_api.h.
inline constexpr std::string_view k_device_runtime_header = "__kjit_device_runtime.h";

}  // namespace kjit::compile
