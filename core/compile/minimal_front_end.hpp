// kjit::compile::MinimalFrontEnd: whether a compile may ask NVRTC for its minimal front end
// (--minimal), which leaves out the declarations most kernels never use: textures and surfaces,
// the device runtime (cudaMalloc, launches from device code) and the runtime and driver APIs'
// types and macros (cudaError_t, CUdeviceptr, CUDART_VERSION). A program that needs none of
// them compiles to the same PTX and cubin in about two thirds of the time (docs/performance.md).
//
// The decision is made from the program's tokens (compile::lex), before NVRTC runs, and is
// conservative: every identifier of those families (cuda*, CU*, tex*, surf*, make_cuda*), a
// launch from device code (<<<), an #include of a toolkit header outside a short list checked to
// compile the same, an #include through a macro, or anything that could observe the difference
// (observing_construct: __has_include, ##, a spliced name, a conditional on a reserved name)
// means the full front end. A program that still fails under --minimal is compiled again on the
// whole full path (costing its failed front-end pass), and remembered for the rest of the
// process; NVRTC refusing the flag itself turns it off for the process. The setting
// (KJIT_NVRTC_FAST) is part of the cache key: no process is served another setting's result.
// Never throws.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::compile {

// The text NVRTC will read for a program, as far as kjit knows it before compiling.
struct ProgramText {
  std::string_view source;
  std::vector<std::string_view> headers;         // in-memory and user headers reached, name expressions
  std::vector<std::string_view> other_includes;  // #include spellings neither of those resolves
  std::vector<std::string_view> arguments;       // the whole NVRTC argument list
};

class MinimalFrontEnd {
public:
  // Empty when --minimal may be used; else what rules it out, for the debug log
  // ("the source names cudaError_t", "<cub/block/block_reduce.cuh> is a toolkit header").
  static std::string ruled_out(const ProgramText& text);

  // The first identifier or construct in `text` that --minimal leaves out ("cudaMalloc", "<<<",
  // "#include MACRO"), comments, string literals and #include targets passed over; "" for none.
  static std::string excluded_name(std::string_view text);

  // A construct of `text` that could see which path compiled it, read from its tokens as the
  // preprocessor reads them: __has_include, token pasting (##, which builds names no scan sees), a
  // name split by a line splice, __CUDACC_RTC_MINIMAL__, or a conditional directive on a name
  // the implementation reserves (#ifdef __TEXTURE_INDIRECT_FUNCTIONS_H__) other than the few
  // defined alike on both paths (__CUDA_ARCH__, __CUDACC_VER_MAJOR__, ...). "" for none.
  static std::string observing_construct(std::string_view text);

  // A toolkit header that compiles the same under --minimal (cuda_fp16.h, cuda_bf16.h, mma.h...).
  static bool allowed_toolkit_header(std::string_view spelling);

  // A program (by a hash of its name and text) that failed under --minimal in this process.
  static bool failed_before(std::size_t program);
  static void remember_failure(std::size_t program);
  // NVRTC refused --minimal itself (an older NVRTC): not asked again in this process.
  static bool refused();
  static void remember_refused();
};

}  // namespace kjit::compile
