// kjit::compile: which arch NVRTC compiles a request for. A named arch is checked against NVRTC's
// list; a device's arch (compute capability) is that arch, or PTX for the newest arch NVRTC knows
// when the device is newer than NVRTC (the driver compiles it). No device is asked here: the
// compile service (request/) owns "native" and the guess it makes before a cache lookup.
#pragma once

#include <kjit/compile_options.hpp>

#include <vector>

namespace kjit::compile {

// `arch` itself when NVRTC supports it. Throws UsageError listing the supported archs.
Arch check_arch(const Arch& arch);
// The arch to compile for device `ordinal` of compute capability `cc` (75, 90, ...). Throws
// UsageError when NVRTC knows no arch at or below it.
Arch arch_for_device(int cc, int ordinal);
// NVRTC's real archs, ascending (never empty).
const std::vector<int>& nvrtc_archs();

}  // namespace kjit::compile
