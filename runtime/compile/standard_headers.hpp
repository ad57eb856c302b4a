// kjit::compile::standard_headers: the C and C++ standard headers a kernel written for nvcc
// includes (<cstdio>, <cstdint>, <cmath>, <type_traits>, <limits>, <array>, ... and the .h forms
// of the C ones), which NVRTC does not have. Each maps to libcu++ (<cuda/std/...>, shipped with
// the toolkit) where it has the header, with namespace std opened onto cuda::std and the C names
// in the global namespace, and is kjit's own where libcu++ has nothing under NVRTC (<cstdio>:
// printf is built in; <cfloat>: the FLT_ and DBL_ macros; <ctime>: clock() is built in). <cmath>
// and <math.h> also define what the host's <math.h> gives nvcc's kernels: M_PI and the other M_
// constants, INFINITY, NAN, HUGE_VALF. Host-only functions (fopen, exit, time, ...) are left
// out: a kernel file that includes a C header for its host code compiles. NvrtcCompiler hands them to NVRTC as
// in-memory headers, except those a user header of the same name shadows. They enter the cache
// key through kjit's version. Never throws.
#pragma once

#include <string_view>
#include <utility>
#include <vector>

namespace kjit::compile {

// (name, content), the bridge header "__kjit_std.h" first.
const std::vector<std::pair<std::string_view, std::string_view>>& standard_headers();

}  // namespace kjit::compile
