// compile::driver_header_types: the toolkit's cuda.h without its host functions. What it drops
// and keeps, on small texts written as cuda.h writes them, and the toolkit's own header: NVRTC
// (sm_90, no GPU needed) compiles a kernel that uses its types.
#include "runtime/compile/driver_header.hpp"
#include "runtime/compile/nvrtc_compiler.hpp"

#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <string>

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_SUITE("driver_header") {
  TEST_CASE("function declarations go while types and enums and macros and function pointer types stay") {
    const std::string header = R"(#ifndef __cuda_cuda_h__
#define __cuda_cuda_h__
#include <stdlib.h>
/* A comment that names CUresult CUDAAPI cuFake(int); and "quotes" */
typedef unsigned long long CUdeviceptr_v2; // a line comment
typedef CUdeviceptr_v2 CUdeviceptr;
typedef enum cudaError_enum {
    CUDA_SUCCESS = 0, /**< no error */
    CUDA_ERROR_INVALID_VALUE = 1
} CUresult;
#define CU_LAUNCH_PARAM_END ((void*)0x00)
#define CU_TWO_LINES(a) \
    ((a) + 1)
typedef void (CUDA_CB *CUhostFn)(void *userData);
#ifdef _WIN32
#define CUDAAPI __stdcall
#else
#define CUDAAPI
#endif
CUresult CUDAAPI cuInit(unsigned int Flags);
__CUDA_DEPRECATED CUresult CUDAAPI cuCtxDetach(CUcontext ctx);
CUresult CUDAAPI
cuLinkCreate(unsigned int numOptions, CUjit_option *options,
    void **optionValues, CUlinkState *stateOut);
    CUresult CUDAAPI cuMemBatchDecompressAsync(
        CUmemDecompressParams *paramsArray,
        size_t count
    );
typedef struct CUdevResource_st { int type; } CUdevResource;
#if defined(__CUDA_API_PER_THREAD_DEFAULT_STREAM)
static inline CUresult cuGetProcAddress_v2_ptsz(const char *symbol, cuuint64_t flags) {
    if ((flags & 1) == 0) { flags |= 2; }
    return cuGetProcAddress_v2(symbol, flags);
}
#define cuGetProcAddress_v2 cuGetProcAddress_v2_ptsz
#endif
const char* k_text = "// not a comment /* nor this */";
#endif
)";
    const std::string out = kjit::compile::driver_header_types(header);
    INFO(out);
    for (const char* gone : {"cuInit", "cuCtxDetach", "cuLinkCreate", "cuMemBatchDecompressAsync",
                             "cuGetProcAddress_v2_ptsz(const", "no error", "a line comment", "cuFake",
                             "flags |= 2"}) {
      CHECK_MESSAGE(!has(out, gone), gone);
    }
    for (const char* kept : {"#ifndef __cuda_cuda_h__", "#include <stdlib.h>", "typedef CUdeviceptr_v2 CUdeviceptr;",
                             "CUDA_ERROR_INVALID_VALUE = 1", "} CUresult;", "#define CU_LAUNCH_PARAM_END ((void*)0x00)",
                             "#define CU_TWO_LINES(a) \\\n    ((a) + 1)", "typedef void (CUDA_CB *CUhostFn)(void *userData);",
                             "#define CUDAAPI", "typedef struct CUdevResource_st { int type; } CUdevResource;",
                             "#define cuGetProcAddress_v2 cuGetProcAddress_v2_ptsz",
                             "\"// not a comment /* nor this */\"", "#endif"}) {
      CHECK_MESSAGE(has(out, kept), kept);
    }
  }

  TEST_CASE("the toolkit's cuda.h: no host function is left and its types stay") {
    const auto& dirs = kjit::compile::NvrtcCompiler::toolkit_include_dirs();
    std::string text;
    for (const auto& dir : dirs) {
      if (std::filesystem::exists(dir / "cuda.h")) text = kjit::test::read_file(dir / "cuda.h");
    }
    REQUIRE_FALSE(text.empty());
    const std::string out = kjit::compile::driver_header_types(text);
    CHECK(out.size() < text.size() / 4);  // comments and declarations are most of it
    CHECK_FALSE(has(out, "cuMemAlloc("));
    CHECK_FALSE(has(out, "cuLaunchKernel("));
    CHECK_FALSE(has(out, "CUresult CUDAAPI"));
    for (const char* kept : {"CUdeviceptr", "CUtexObject", "CUDA_ERROR_NOT_READY", "CU_AD_FORMAT_FLOAT",
                             "CUDA_VERSION", "CUtensorMap", "CUdevResource"}) {
      CHECK_MESSAGE(has(out, kept), kept);
    }
  }
}
