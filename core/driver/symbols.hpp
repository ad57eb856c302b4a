// kjit::driver symbols: what a kernel's mangled (Itanium) name says. demangle() gives the C++
// declaration ("square(float const*, float*, int)"), plain_name() its name without parameters and
// return type ("square", "scale<float>"), parameter_types() its parameter types in order. None
// throws; a name that is not mangled (extern "C") demangles to itself and has no parameter types.
#pragma once

#include "core/base/tools_api.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::driver {

KJIT_TOOLS_API std::string demangle(const std::string& symbol);
// "void scale<float>(float*, float, int)" -> "scale<float>"; "square(float*)" -> "square".
KJIT_TOOLS_API std::string plain_name(std::string_view declaration);
// The top-level parameter types of a demangled declaration, or nullopt when it has no list.
std::optional<std::vector<std::string>> parameter_types(std::string_view declaration);

}  // namespace kjit::driver
