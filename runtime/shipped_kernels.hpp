// kjit::runtime::load_shipped: loads one kernel file of the kernels_src shipped with kjit, with
// the instantiations its manifest entry lists.
#pragma once

#include <kjit/module.hpp>
#include <kjit/runtime.hpp>

#include <string_view>

namespace kjit::runtime {

Module load_shipped(Runtime& runtime, std::string_view file, Device device);

}  // namespace kjit::runtime
