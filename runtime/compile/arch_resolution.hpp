// kjit::compile::resolve_arch: the arch a request compiles to. A named arch is checked against
// NVRTC's list; native resolves to the device's arch, or to PTX for the newest arch NVRTC knows
// when the device is newer than NVRTC (the driver compiles it). Throws UsageError for an arch
// NVRTC does not support, and what Device throws without a driver.
#pragma once

#include <kjit/compile_options.hpp>
#include <kjit/device.hpp>

#include <optional>
#include <vector>

namespace kjit::compile {

Arch resolve_arch(const Arch& arch, std::optional<Device> device);
// The arch a request resolves to when NVRTC supports it, without asking NVRTC: good enough to
// look for a cache entry, which exists only if this NVRTC (its version is in the key) compiled
// for that arch. A miss then resolves properly.
inline Arch resolve_arch_unchecked(const Arch& arch, const Device& device) {
  return arch.is_native() ? Arch::sm(device.compute_capability()) : arch;
}
// NVRTC's real archs, ascending (never empty).
const std::vector<int>& nvrtc_archs();

}  // namespace kjit::compile
