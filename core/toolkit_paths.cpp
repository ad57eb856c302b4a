// kjit::toolkit_paths: where the NVRTC and the CUDA headers kjit compiles with were found.
#include <kjit/runtime.hpp>

#include "core/compile/nvrtc_compiler.hpp"

#include <dlfcn.h>

#include <filesystem>

#include <nvrtc.h>

namespace kjit {

ToolkitPaths toolkit_paths() {
  ToolkitPaths out;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) != 0 && info.dli_fname != nullptr) {
    out.nvrtc_library = info.dli_fname;
  }
  for (const auto& dir : compile::NvrtcCompiler::toolkit_include_dirs()) out.include_dirs.push_back(dir.string());
  for (auto it = out.include_dirs.rbegin(); it != out.include_dirs.rend() && out.root.empty(); ++it) {
    if (const std::filesystem::path dir(*it); dir.filename() == "include") out.root = dir.parent_path().string();
  }
  return out;
}

}  // namespace kjit
