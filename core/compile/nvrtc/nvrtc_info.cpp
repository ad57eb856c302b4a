// compile::NvrtcInfo: NVRTC's answers (nvrtcVersion, nvrtcGetSupportedArchs) and the toolkit's
// include folders, from the roots core/base/toolkit_location knows.
#include "core/compile/nvrtc/nvrtc_info.hpp"

#include "core/base/nvrtc_library.hpp"
#include "core/base/toolkit_location.hpp"

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

// The version and archs a hit needs come from base::nvrtc_facts(), which opens NVRTC only where no
// kept answer names the same library: a process whose requests all hit never opens it.
std::string NvrtcInfo::version() {
  const base::NvrtcFacts& f = base::nvrtc_facts();
  return std::to_string(f.major) + "." + std::to_string(f.minor);  // no fmt: a cache hit asks for it
}

bool NvrtcInfo::has_own_cache() {
  const base::NvrtcFacts& f = base::nvrtc_facts();
  return f.major > 12 || (f.major == 12 && f.minor >= 9);
}

std::vector<int> NvrtcInfo::supported_archs() { return base::nvrtc_facts().archs; }

}  // namespace kjit::compile
