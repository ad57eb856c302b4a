// kjit::compile::standard_headers: the C and C++ standard headers a kernel written for nvcc
// includes (<cstdio>, <cstdint>, <cmath>, <type_traits>, <limits>, <array>, ... and the .h forms
// of the C ones), which NVRTC does not have. Each maps to libcu++ (<cuda/std/...>, shipped with
// the toolkit) where it has the header, with namespace std opened onto cuda::std and the C names
// in the global namespace, and is kjit's own where libcu++ has nothing under NVRTC (<cstdio>:
// printf is built in; <cfloat>: the FLT_ and DBL_ macros; <ctime>: clock() is built in). <cmath>
// and <math.h> also define what the host's <math.h> gives nvcc's kernels: M_PI and the other M_
// constants, INFINITY, NAN, HUGE_VALF. Host-only functions (fopen, exit, time, ...) are left
// out: a kernel file that includes a C header for its host code compiles. std::numeric_limits
// (<limits>) is a template of namespace std of its own, cuda::std's behind it, so that a kernel
// can specialize it for its types as under nvcc; everything else in std is cuda::std's
// (docs/headers.md). <algorithm>, <numeric> and <complex> are libcu++'s.
// <cuda.h> is the toolkit's own without its host function declarations (driver_header), made once
// per process from the toolkit NVRTC uses. NvrtcCompiler hands them to NVRTC as in-memory headers,
// except those a user header of the same name shadows. They enter the cache key through kjit's
// version (cuda.h, as every toolkit header, through NVRTC's). Never throws.
#pragma once

#include <string_view>
#include <utility>
#include <vector>

namespace kjit::compile {

// (name, content), the bridge header "__kjit_std.h" first, "cuda.h" last (when the toolkit has one).
const std::vector<std::pair<std::string_view, std::string_view>>& standard_headers();

}  // namespace kjit::compile
