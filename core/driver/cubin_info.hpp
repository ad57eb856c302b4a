// kjit::driver::cubin_param_sizes: a kernel's parameter sizes read from the cubin kjit itself
// loaded, so that making a kernel handle needs no driver call past cuModuleGetFunction; and
// cubin_function_resources: what the driver's function attributes would say of a kernel's
// stack, constant banks and launch bounds, read without a driver (CUDA 13's ptxas reports none).
//
// A cubin is an ELF file. Each kernel `sym` has a section ".nv.info.sym" of attribute records:
//   record     = fmt:u8 attr:u8 ( u16 value              ; fmt 1 (none), 2 (byte), 3 (half)
//                               | u16 size bytes[size] )  ; fmt 4 (sized)
//   KPARAM_INFO (attr 0x17, fmt 4, 12 bytes) = u32 index, u16 ordinal, u16 offset,
//                                              u32 flags with the size in bits 18..31
//   KPARAM_INFO_V2 (attr 0x45, fmt 4, 12 bytes) = the same with the size in bits 0..15 (NVRTC
//                                              13.0 writes it when the parameters pass 4 KB)
//   PARAM_CBANK (attr 0x0a, fmt 4, 8 bytes)  = u32 symbol, u16 bank offset, u16 total size
//   MAX_THREADS (attr 0x05, fmt 4, 12 bytes) = u32 x, y, z: PTX .maxntid (__launch_bounds__)
//   REQNTID (attr 0x10, fmt 4, 12 bytes)     = u32 x, y, z: PTX .reqntid
// The section ".nv.info" holds records for every function, each naming it by its index in the
// symbol table (sh_link): fmt 4, 8 bytes = u32 symbol index, u32 value, for REGCOUNT (0x2f),
// FRAME_SIZE (0x11) and MIN_STACK_SIZE (0x12: the frame with its callees', the driver's
// CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES). Sections ".nv.constant<bank>.sym" are the function's
// constant banks (bank 0: its parameters and the driver's reserved words; ptxas's "cmem[0]").
// The layout is NVIDIA's and undocumented, so every answer is cross-checked: the ordinals are
// 0..n-1 once each, every parameter lies inside the total that PARAM_CBANK states, and the last
// one ends where that total ends (up to alignment). Anything else gives nullopt, and the caller
// asks the driver (cuFuncGetParamInfo) as before. Nothing here throws or touches the driver.
#pragma once

#include "core/base/tools_api.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace kjit::driver {

// Sizes of `symbol`'s parameters in declaration order, or nullopt when `image` is not a cubin
// whose records for `symbol` pass the checks above (a fatbin, PTX, another layout, damage).
std::optional<std::vector<std::size_t>> cubin_param_sizes(std::string_view image, std::string_view symbol);

// What a cubin says of one function's resources; each field empty where the cubin has no record.
struct CubinFunctionResources {
  std::optional<int> registers;                              // REGCOUNT
  std::optional<std::uint64_t> local;                        // per thread: MIN_STACK_SIZE, else FRAME_SIZE
  std::uint64_t constant = 0;                                // the function's .nv.constant<bank> sections
  std::optional<std::array<std::uint32_t, 3>> max_ntid;      // MAX_THREADS (.maxntid)
  std::optional<std::array<std::uint32_t, 3>> req_ntid;      // REQNTID (.reqntid)
};

// The records of `symbol` in `image`, or nullopt when `image` is not an ELF cubin with a
// ".nv.info.symbol" section (a fatbin, PTX, damage) or a record there does not parse.
KJIT_TOOLS_API std::optional<CubinFunctionResources> cubin_function_resources(std::string_view image, std::string_view symbol);

}  // namespace kjit::driver
