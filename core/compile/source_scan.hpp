// kjit::compile::first_name: a lexical scan of CUDA source for the names it uses, before NVRTC
// sees it (MinimalFrontEnd, NvccEnvironment). It reports each identifier outside comments,
// string and character literals (raw ones too) and #include targets, and two constructs as
// pseudo-names: a launch from device code ("<<<") and an #include through a macro
// ("#include MACRO"). Macros are not expanded: a name built by ## is not seen (the callers
// fall back when NVRTC says so). Never throws.
#pragma once

#include <functional>
#include <string_view>

namespace kjit::compile {

inline constexpr std::string_view k_device_launch = "<<<";
inline constexpr std::string_view k_macro_include = "#include MACRO";

// The first name of `text` for which `wanted` is true (a view into `text`, or one of the
// constants above), or "" when there is none.
std::string_view first_name(std::string_view text, const std::function<bool(std::string_view)>& wanted);

}  // namespace kjit::compile
