// kjit::compile's tables of compile flags besides the typed fields: NVRTC 13's own options
// (names and the value each takes), the nvcc flags kjit drops because under nvcc they only
// concern the host compiler, the linker or nvcc's driver, the targets a -gencode / -code value
// names, and the closest known option to a flag nobody knows. normalized() (compile_options.cpp)
// reads flags with them; docs/nvcc-flags.md is the table for users. Only the target readers
// throw (UsageError, for a value they cannot read).
#pragma once

#include <kjit/compile_options.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace kjit::compile {

// What follows an option's name: nothing, a value ("=v" or the next argument), true/false
// ("=true" or the next argument), or a value only when the next argument is not a flag.
enum class OptionValue { none, required, boolean, optional };

// One NVRTC option: its long and short spelling (either may be the only one) and its value.
struct NvrtcOption {
  std::string_view name;
  std::string_view short_name;
  OptionValue value;
};

// How a flag's name (the part before '=') matched an NVRTC option.
enum class NameMatch { exact, other_dashes };

struct FoundNvrtcOption {
  const NvrtcOption* option = nullptr;  // nullptr: NVRTC has no such option
  NameMatch match = NameMatch::exact;    // other_dashes: "-dlink-time-opt" for "--dlink-time-opt"
};

// The NVRTC option spelled `name` exactly, else one whose spelling differs only in the number of
// leading dashes (nvcc accepts both, NVRTC only its own).
FoundNvrtcOption find_nvrtc_option(std::string_view name);

// An nvcc flag that NVRTC lacks and that does nothing to device code under nvcc (or has no
// NVRTC counterpart): kjit drops it and says why once.
struct HostOnlyFlag {
  std::string_view name;
  std::string_view other_name;
  OptionValue value;
  std::string_view why;  // completes "under nvcc it ..."
};

// The host-only flag named `name` (before '='): exact names, then the prefixes -l, -L and -W.
const HostOnlyFlag* find_host_only_flag(std::string_view name);

// One target of -arch, -code or -gencode: an arch, and whether it asks for LTO-IR (code=lto_90).
struct GpuTarget {
  Arch arch;
  bool lto = false;
};

// The targets of a -gencode value: "arch=compute_90,code=sm_90", "arch=compute_90,code=[sm_90,
// compute_90]" (brackets or quotes), "arch=compute_90" alone. Only code= entries are targets
// (arch= is the virtual intermediate) unless there are none. `flag` is for the error message.
std::vector<GpuTarget> gencode_targets(std::string_view value, std::string_view flag);

// The targets of a -code / --gpu-code list or an -arch value ("sm_90", "sm_90,compute_90",
// "lto_90"); "native" is Arch::native(). "all" and "all-major" are refused.
std::vector<GpuTarget> code_targets(std::string_view list, std::string_view flag);

// The known option closest to `flag` (edit distance over NVRTC's names and the nvcc spellings
// kjit translates), as "--name (-short)".
std::string closest_option(std::string_view flag);

}  // namespace kjit::compile
