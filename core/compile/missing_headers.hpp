// NVRTC's `cannot open source file "X"`: a note for the log saying where NVRTC looked and which
// package ships X (the toolkit's CCCL, a pip package such as nvidia-cuda-cccl, a library's), so
// that a program compiled against pip's CUDA packages (torch's nvidia/cu13 has no CCCL headers)
// says what to install; and headers NVRTC opens but cannot compile (CCCL's host code).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::compile {

// The note for each header the log says is missing (one line each, "kjit: ..."), or "" when there
// is none. `searched`: the include folders NVRTC was given (the toolkit's, then the program's -I).
std::string explain_missing_headers(std::string_view log, const std::vector<std::filesystem::path>& searched);

// The note for headers NVRTC cannot take, by the files the log's errors are in, or "": Thrust's
// <thrust/complex.h> (host code: cuda::std::complex instead), Thrust's host containers and
// algorithms (keep that host code inside #ifndef __CUDACC_RTC__), else CCCL's host code of CUB
// (explain_cccl_host_code: the block, warp and thread headers instead). One line, which the log
// gives first: it says what the hundreds of errors after it come from.
std::string explain_unusable_headers(std::string_view log);

// Who ships header `name` ("cub/cub.cuh"): a short phrase, or "" for a header kjit does not know.
std::string header_package(std::string_view name);

}  // namespace kjit::compile
