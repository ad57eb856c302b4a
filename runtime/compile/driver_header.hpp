// kjit::compile::driver_header_types: the toolkit's <cuda.h> as a kernel file may include it
// under NVRTC. A kernel written for nvcc includes <cuda.h> for its types (CUdeviceptr,
// CUtexObject, CUresult and its values, CUarray_format, the CU_ macros); NVRTC refuses the
// header as it is, because its driver functions are host declarations ("host functions are not
// allowed in JIT mode"). This keeps the header's own text, less its comments, every function
// declared with CUDAAPI (cuInit, cuMemAlloc, ...) and its static inline host helpers; so the
// types are always the toolkit's own, whatever its version. standard_headers() hands the result
// to NVRTC as "cuda.h". Never throws.
#pragma once

#include <string>
#include <string_view>

namespace kjit::compile {

// `cuda_h`: the text of the toolkit's cuda.h.
std::string driver_header_types(std::string_view cuda_h);

}  // namespace kjit::compile
