// kjit::compile::toolkit_headers: the toolkit's API headers (<cuda.h>, <cublas_v2.h>, <cublasLt.h>,
// <curand.h>, <cufft.h>, <cusparse.h>, <cusolverDn.h>, <cudnn.h>, ...) as a kernel file may
// include them under NVRTC. Kernel files and their headers include them for their types, enums
// and macros (CUdeviceptr, cublasHandle_t, CUBLAS_OP_N, curandState's host twin's enums, ...);
// NVRTC refuses them as they are, because their API functions are host declarations ("host
// functions are not allowed in JIT mode"). One filter (host_api_types) keeps each header's own
// text, less its comments, every function declared with the header's API macro (CUDAAPI,
// CUBLASWINAPI, CURANDAPI, ...) and its static inline host helpers; so the types are always the
// toolkit's own, whatever its version. A header is read and filtered only when a program names it
// (with the headers it includes), once per process. <cub/cub.cuh> is served the same way, less its
// host-side parts (device_side_umbrella). Never throws.
#pragma once

#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kjit::compile {

// `header`: the text of a toolkit API header; `api_macros`: the macros its API functions are
// declared with (CUDAAPI for cuda.h). A function declaration is dropped when the macro appears
// before its name; ALL_CAPS(...) annotations before it (deprecation macros) are passed over.
std::string host_api_types(std::string_view header, std::span<const std::string_view> api_macros);

// CUB's umbrella header, <cub/cub.cuh>, as kjit hands it to NVRTC: the toolkit's own text less its
// #include lines of <cub/device/...> (device-wide algorithms, launched from the host) and
// <cub/util_allocator.cuh> (a host allocator); everything device code uses stays.
std::string device_side_umbrella(std::string_view header);

// The filtered toolkit headers for the names in `requested` (#include spellings, "cublas_v2.h"):
// each requested header's group (the headers it includes: cublas_v2.h brings cublas_api.h) that
// the toolkit has, as (name, content), made once per process and group.
std::vector<std::pair<std::string_view, std::string_view>> toolkit_headers(const std::set<std::string>& requested);

// Every header name toolkit_headers() can stand for.
std::vector<std::string_view> toolkit_header_names();

}  // namespace kjit::compile
