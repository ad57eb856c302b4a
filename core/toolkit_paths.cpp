// kjit::toolkit_paths: where the NVRTC and the CUDA headers kjit compiles with were found.
#include <kjit/runtime.hpp>

#include "core/compile/nvrtc_compiler.hpp"

#include <dlfcn.h>

#include <nvrtc.h>

namespace kjit {

ToolkitPaths toolkit_paths() {
  ToolkitPaths out;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) != 0 && info.dli_fname != nullptr) {
    out.nvrtc_library = info.dli_fname;
  }
  for (const auto& dir : compile::NvrtcCompiler::toolkit_include_dirs()) out.include_dirs.push_back(dir.string());
  return out;
}

}  // namespace kjit
