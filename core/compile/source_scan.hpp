// kjit::compile::first_name: the names a CUDA source uses, read from its tokens (compile::lex)
// before NVRTC sees it (MinimalFrontEnd, NvccEnvironment). It reports each identifier as the
// preprocessor would spell it (line splices joined), never one inside a comment, a literal or an
// #include's header name, and two constructs as pseudo-names: a launch from device code ("<<<")
// and an #include through a macro ("#include MACRO"). Macros are not expanded. Never throws.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace kjit::compile {

inline constexpr std::string_view k_device_launch = "<<<";
inline constexpr std::string_view k_macro_include = "#include MACRO";

// The first name of `text` for which `wanted` is true (or one of the constants above), or ""
// when there is none.
std::string first_name(std::string_view text, const std::function<bool(std::string_view)>& wanted);

}  // namespace kjit::compile
