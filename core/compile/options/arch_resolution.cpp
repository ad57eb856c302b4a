#include "core/compile/options/arch_resolution.hpp"

#include <kjit/error.hpp>

#include "core/compile/nvrtc/nvrtc_info.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace kjit::compile {

const std::vector<int>& nvrtc_archs() {
  static const std::vector<int> archs = [] {
    auto a = NvrtcInfo::supported_archs();
    std::sort(a.begin(), a.end());
    if (a.empty()) a.push_back(0);
    return a;
  }();
  return archs;
}

Arch check_arch(const Arch& arch) {
  const auto& supported = nvrtc_archs();
  if (arch.number() < supported.front() ||
      (arch.is_real() && std::find(supported.begin(), supported.end(), arch.number()) == supported.end())) {
    throw UsageError(fmt::format("compiling for {}: NVRTC {} does not support it; supported: sm_{}", arch.str(),
                                 NvrtcInfo::version(), fmt::join(supported, ", sm_")));
  }
  return arch;
}

Arch arch_for_device(int cc, int ordinal) {
  const auto& supported = nvrtc_archs();
  if (std::find(supported.begin(), supported.end(), cc) != supported.end()) return Arch::sm(cc);
  // A device newer than NVRTC: PTX for the newest arch it knows; the driver compiles it.
  int best = 0;
  for (int a : supported) {
    if (a <= cc) best = std::max(best, a);
  }
  if (best == 0) {
    throw UsageError(fmt::format("compiling for device {} (sm_{}): NVRTC {} supports only sm_{}", ordinal, cc,
                                 NvrtcInfo::version(), fmt::join(supported, ", sm_")));
  }
  return Arch::compute(best);
}

}  // namespace kjit::compile
