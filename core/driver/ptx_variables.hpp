// kjit::driver::ptx_variables: the __device__ and __constant__ variables a module's PTX declares
// at module scope (a line that starts with [.visible|.extern|.weak] .global or .const), by their
// PTX (mangled) names, sorted. Module::global_names() and the error for a missing global list
// them: the driver has no call that enumerates a module's variables. Never throws.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kjit::driver {

std::vector<std::string> ptx_variables(std::string_view ptx);

}  // namespace kjit::driver
