// kjit::driver::cubin_param_sizes: a kernel's parameter sizes read from the cubin kjit itself
// loaded, so that making a kernel handle needs no driver call past cuModuleGetFunction.
//
// A cubin is an ELF file. Each kernel `sym` has a section ".nv.info.sym" of attribute records:
//   record     = fmt:u8 attr:u8 ( u16 value              ; fmt 1 (none), 2 (byte), 3 (half)
//                               | u16 size bytes[size] )  ; fmt 4 (sized)
//   KPARAM_INFO (attr 0x17, fmt 4, 12 bytes) = u32 index, u16 ordinal, u16 offset,
//                                              u32 flags with the size in bits 18..31
//   KPARAM_INFO_V2 (attr 0x45, fmt 4, 12 bytes) = the same with the size in bits 0..15 (NVRTC
//                                              13.0 writes it when the parameters pass 4 KB)
//   PARAM_CBANK (attr 0x0a, fmt 4, 8 bytes)  = u32 symbol, u16 bank offset, u16 total size
// The layout is NVIDIA's and undocumented, so every answer is cross-checked: the ordinals are
// 0..n-1 once each, every parameter lies inside the total that PARAM_CBANK states, and the last
// one ends where that total ends (up to alignment). Anything else gives nullopt, and the caller
// asks the driver (cuFuncGetParamInfo) as before. Nothing here throws or touches the driver.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace kjit::driver {

// Sizes of `symbol`'s parameters in declaration order, or nullopt when `image` is not a cubin
// whose records for `symbol` pass the checks above (a fatbin, PTX, another layout, damage).
std::optional<std::vector<std::size_t>> cubin_param_sizes(std::string_view image, std::string_view symbol);

}  // namespace kjit::driver
