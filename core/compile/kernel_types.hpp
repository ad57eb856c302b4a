// kjit::compile::KernelTypes: asks NVRTC for the parameter types of a program's extern "C"
// kernels, whose PTX names say none. For each such kernel the compile gets a name expression
// `&__kjit_kernel_type<decltype(&k)>` over a variable template appended to its source
// (`template <typename F> static __device__ char __kjit_kernel_type = 0;`); NVRTC's lowered name
// of it (`_ZN..18__kjit_kernel_typeIPFvPKfPfiEEE`) spells the kernel's type as the compiler
// compiled it: after the preprocessor, -D, scopes, typedefs, aliases and macros. The kernels'
// code is unchanged; the variable (one byte, internal linkage) is the only symbol added, and
// kjit's PTX views, diff and resources hide it (is_added_symbol).
//
// Which kernels are asked about is read from the tokens (KernelDeclarations: extern "C",
// non-template __global__ functions at namespace scope, object-like macros read through); a query
// NVRTC cannot answer (a kernel declared by a function-like macro, -std=c++11) makes the compile
// fail, and NvrtcCompiler compiles again without queries: those kernels stay unchecked. Never throws.
#pragma once

#include "core/base/tools_api.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::compile {

inline constexpr std::string_view k_kernel_type_variable = "__kjit_kernel_type";

struct KernelTypeQuery {
  std::string kernel;      // the kernel's PTX name ("square")
  std::string expression;  // "&__kjit_kernel_type<decltype(&ops::square)>"
};

class KernelTypes {
public:
  // The queries for `source` compiled with `arguments` (none below C++14: the variable is a template).
  static std::vector<KernelTypeQuery> queries(std::string_view source, const std::vector<std::string>& arguments);
  // What is appended to the source when there are queries.
  static std::string_view declaration();
  // The parameter types a lowered name spells, as the demangler writes them ("float const*",
  // "int", "__half*"); nullopt when it is not one of kjit's queries.
  static std::optional<std::vector<std::string>> parameter_types(std::string_view lowered);
  // Whether a PTX or cubin symbol is the added variable.
  KJIT_TOOLS_API static bool is_added_symbol(std::string_view symbol);
};

}  // namespace kjit::compile
