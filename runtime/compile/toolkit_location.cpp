#include "runtime/compile/toolkit_location.hpp"

#include <nvrtc.h>

#include <dlfcn.h>

#include <cstdlib>

namespace kjit::compile {

std::filesystem::path nvrtc_library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) == 0 || info.dli_fname == nullptr) return {};
  return std::filesystem::path(info.dli_fname).parent_path();
}

std::vector<std::filesystem::path> toolkit_roots() {
  std::vector<std::filesystem::path> roots;
  for (const char* var : {"KJIT_CUDA_HOME", "CUDA_HOME", "CUDA_PATH"}) {
    if (const char* v = std::getenv(var); v && *v) roots.emplace_back(v);
  }
  if (const auto lib = nvrtc_library_dir(); !lib.empty()) {
    roots.push_back(lib.parent_path());                // <cuda>/lib64/libnvrtc.so
    roots.push_back(lib.parent_path().parent_path());  // <cuda>/targets/<arch>/lib/libnvrtc.so
  }
  roots.push_back(std::filesystem::path(KJIT_CUDA_INCLUDE_DIR).parent_path());
  roots.emplace_back("/usr/local/cuda");
  return roots;
}

}  // namespace kjit::compile
