// kjit::driver::ModuleAccess: how kjit's own rooms load a compiled result as a Module. Programs
// get modules from a Runtime (its registry); the Runtime's registry, and inspect/'s one-off load
// for a kernel's attributes, come here.
#pragma once

#include <kjit/module.hpp>

#include <utility>

namespace kjit::driver {

struct ModuleAccess {
  // Throws CudaError (with the program, key and arch) when the driver refuses the image.
  static Module load(CompileResult result, Device device) { return Module(std::move(result), device); }
  // `module` as the answer to a load that went `outcome`'s way (Module::outcome()).
  static Module answered(Module module, Outcome outcome) {
    module.m_outcome = outcome;
    return module;
  }
};

}  // namespace kjit::driver
