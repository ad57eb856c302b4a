// kjit::toolkit_paths: where the NVRTC and the CUDA headers kjit compiles with were found.
#include <kjit/runtime.hpp>

#include "core/base/nvrtc_library.hpp"
#include "core/compile/nvrtc/nvrtc_info.hpp"


namespace kjit {

ToolkitPaths toolkit_paths() {
  ToolkitPaths out;
  out.nvrtc_library = base::nvrtc_library_file();  // NVRTC is opened at run time (core/base/nvrtc_library)
  for (const auto& dir : compile::NvrtcInfo::toolkit_include_dirs()) out.include_dirs.push_back(dir.string());
  return out;
}

}  // namespace kjit
