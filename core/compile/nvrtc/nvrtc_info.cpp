// compile::NvrtcInfo: NVRTC's answers (nvrtcVersion, nvrtcGetSupportedArchs) and the toolkit's
// include folders, from the roots core/base/toolkit_location knows.
#include "core/compile/nvrtc/nvrtc_info.hpp"

#include "core/base/toolkit_location.hpp"

#include <nvrtc.h>

#include <system_error>

namespace kjit::compile {
namespace {

std::vector<std::filesystem::path> find_toolkit_include_dirs() {
  std::error_code ec;
  for (const auto& root : base::toolkit_roots()) {
    const std::filesystem::path dir = root / "include";
    if (std::filesystem::exists(dir / "cuda_runtime.h", ec) || std::filesystem::exists(dir / "cuda_fp16.h", ec)) {
      std::vector<std::filesystem::path> dirs;
      if (std::filesystem::exists(dir / "cccl", ec)) dirs.push_back(dir / "cccl");
      dirs.push_back(dir);
      return dirs;
    }
  }
  return {};  // NVRTC's built-in headers still work
}

}  // namespace

const std::vector<std::filesystem::path>& NvrtcInfo::toolkit_include_dirs() {
  static const std::vector<std::filesystem::path> dirs = find_toolkit_include_dirs();
  return dirs;
}

std::string NvrtcInfo::version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);  // no fmt: a cache hit asks for it
}

bool NvrtcInfo::has_own_cache() {
  static const bool own = [] {
    int major = 0, minor = 0;
    nvrtcVersion(&major, &minor);
    return major > 12 || (major == 12 && minor >= 9);
  }();
  return own;
}

std::vector<int> NvrtcInfo::supported_archs() {
  int n = 0;
  if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0) return {};
  std::vector<int> archs(static_cast<std::size_t>(n));
  if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS) return {};
  return archs;
}

}  // namespace kjit::compile
