#include "core/compile/missing_headers.hpp"

#include "core/compile/host_functions.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>

namespace kjit::compile {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

struct Shipper {
  std::string_view prefix;  // of the include name
  std::string_view package;
};

// By the include name's start; the first match wins.
constexpr std::array k_shippers{
    Shipper{"cub/", "CCCL (CUB): the CUDA toolkit's include/cccl, or pip's nvidia-cuda-cccl (nvidia-cuda-cccl-cu12 "
                    "for CUDA 12); torch's nvidia/cu13 has no CCCL headers"},
    Shipper{"thrust/", "CCCL (Thrust): the CUDA toolkit's include/cccl, or pip's nvidia-cuda-cccl (nvidia-cuda-cccl-cu12 "
                       "for CUDA 12); torch's nvidia/cu13 has no CCCL headers"},
    Shipper{"cuda/", "CCCL (libcu++): the CUDA toolkit's include/cccl, or pip's nvidia-cuda-cccl "
                     "(nvidia-cuda-cccl-cu12 for CUDA 12); torch's nvidia/cu13 has no CCCL headers"},
    Shipper{"nv/", "CCCL (libcu++): the CUDA toolkit's include/cccl, or pip's nvidia-cuda-cccl "
                   "(nvidia-cuda-cccl-cu12 for CUDA 12); torch's nvidia/cu13 has no CCCL headers"},
    Shipper{"cublas", "cuBLAS: the CUDA toolkit, or pip's nvidia-cublas (nvidia-cublas-cu12 for CUDA 12)"},
    Shipper{"curand", "cuRAND: the CUDA toolkit, or pip's nvidia-curand (nvidia-curand-cu12 for CUDA 12)"},
    Shipper{"cufft", "cuFFT: the CUDA toolkit, or pip's nvidia-cufft (nvidia-cufft-cu12 for CUDA 12)"},
    Shipper{"cusparse", "cuSPARSE: the CUDA toolkit, or pip's nvidia-cusparse (nvidia-cusparse-cu12 for CUDA 12)"},
    Shipper{"cusolver", "cuSOLVER: the CUDA toolkit, or pip's nvidia-cusolver (nvidia-cusolver-cu12 for CUDA 12)"},
    Shipper{"cudnn", "cuDNN: pip's nvidia-cudnn-cu13 (nvidia-cudnn-cu12), or a cuDNN install"},
    Shipper{"nccl", "NCCL: pip's nvidia-nccl-cu13 (nvidia-nccl-cu12), or an NCCL install"},
    Shipper{"cutlass/", "CUTLASS: a CUTLASS checkout's include/ (pass it with -I), or pip's nvidia-cutlass"},
    Shipper{"cute/", "CUTLASS (CuTe): a CUTLASS checkout's include/ (pass it with -I), or pip's nvidia-cutlass"},
    Shipper{"torch/", "PyTorch's C++ API: host code for torch's extension wrappers, which NVRTC cannot compile; "
                      "kjit launches the kernel itself, so drop the include and the wrapper"},
    Shipper{"ATen/", "PyTorch's C++ API (ATen): host code NVRTC cannot compile; kernels take plain pointers"},
    Shipper{"c10/", "PyTorch's C++ API (c10): host code NVRTC cannot compile; kernels take plain pointers"},
    Shipper{"cooperative_groups", "the CUDA runtime headers: the CUDA toolkit's include/, or pip's "
                                  "nvidia-cuda-runtime (torch's nvidia/cu13/include has them)"},
    Shipper{"cuda_", "the CUDA runtime headers: the CUDA toolkit's include/, or pip's nvidia-cuda-runtime (torch's "
                     "nvidia/cu13/include has them)"},
    Shipper{"mma.h", "the CUDA runtime headers: the CUDA toolkit's include/, or pip's nvidia-cuda-runtime (torch's "
                     "nvidia/cu13/include has them)"},
    Shipper{"sm_", "the CUDA runtime headers: the CUDA toolkit's include/, or pip's nvidia-cuda-runtime (torch's "
                   "nvidia/cu13/include has them)"},
};

}  // namespace

std::string header_package(std::string_view name) {
  for (const auto& s : k_shippers) {
    if (starts_with(name, s.prefix)) return std::string(s.package);
  }
  return {};
}

std::string explain_missing_headers(std::string_view log, const std::vector<std::filesystem::path>& searched) {
  constexpr std::string_view marker = "cannot open source file \"";
  std::string out;
  std::vector<std::string_view> seen;
  for (std::size_t at = log.find(marker); at != std::string_view::npos; at = log.find(marker, at + 1)) {
    const std::size_t start = at + marker.size();
    const std::size_t end = log.find('"', start);
    if (end == std::string_view::npos) break;
    const std::string_view name = log.substr(start, end - start);
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) continue;
    seen.push_back(name);
    std::vector<std::string> folders;
    for (const auto& d : searched) folders.push_back(d.string());
    const std::string where = folders.empty() ? std::string("NVRTC's built-in headers only (no CUDA toolkit or pip "
                                                            "CUDA package was found)")
                                              : fmt::format("{}", fmt::join(folders, ", "));
    const std::string package = header_package(name);
    out += fmt::format("kjit: \"{}\" is in none of the include folders NVRTC was given ({}); {}\n", name, where,
                       package.empty() ? "if it is a header of your own, pass its folder (-I DIR, include_dirs=[...] "
                                         "or the Program's directory)"
                                       : "it comes with " + package);
  }
  return out;
}

namespace {

// The files of the log's errors ("/x/thrust/complex.h(336): error: ..."), each once, in order.
std::vector<std::string_view> error_files(std::string_view log) {
  std::vector<std::string_view> out;
  for (std::size_t at = log.find("): error"); at != std::string_view::npos; at = log.find("): error", at + 1)) {
    const std::size_t line_start = log.rfind('\n', at) == std::string_view::npos ? 0 : log.rfind('\n', at) + 1;
    const std::string_view line = log.substr(line_start, at - line_start);
    const std::string_view file = line.substr(0, line.rfind('('));
    if (std::find(out.begin(), out.end(), file) == out.end()) out.push_back(file);
  }
  return out;
}

bool is_thrust_file(std::string_view file) {
  return file.find("/thrust/") != std::string_view::npos || file.starts_with("thrust/");
}

bool is_thrust_complex(std::string_view file) {
  return file.ends_with("thrust/complex.h") || file.find("thrust/detail/complex") != std::string_view::npos;
}

}  // namespace

std::string explain_unusable_headers(std::string_view log) {
  const std::vector<std::string_view> files = error_files(log);
  const bool thrust = std::any_of(files.begin(), files.end(), is_thrust_file);
  if (thrust && std::all_of(files.begin(), files.end(), [](std::string_view f) { return !is_thrust_file(f) || is_thrust_complex(f); })) {
    return "kjit: <thrust/complex.h> is host code under NVRTC (conversions to the host's std::complex, stream "
           "operators): in device code use cuda::std::complex (<cuda/std/complex>) or std::complex (<complex>), which "
           "NVRTC compiles (docs/headers.md)\n";
  }
  if (thrust) {
    return "kjit: Thrust's containers and algorithms (thrust::device_vector, thrust::host_vector, thrust::sort, ...) "
           "run on the host, which NVRTC does not compile: keep the host code that uses them, with its #include "
           "<thrust/...> lines, out of NVRTC's sight inside #ifndef __CUDACC_RTC__ ... #endif (nvcc still compiles "
           "the whole file), and the kernels compile as they are; in device code <thrust/tuple.h> and "
           "<thrust/pair.h> work, and cuda::std has the rest (docs/headers.md)\n";
  }
  return explain_cccl_host_code(log);  // CUB's device-wide algorithms: which headers to include instead
}

}  // namespace kjit::compile
