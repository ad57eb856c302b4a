// compile::toolkit_headers: the toolkit's API headers without their host functions. What the one
// filter (host_api_types) drops and keeps, on small texts written as cuda.h and cusparse.h write
// them, the toolkit's own cuda.h, and kernel files that include cuBLAS, cuRAND, cuFFT, cuSPARSE,
// cuSOLVER and cuDNN's headers (where the toolkit has them): NVRTC (sm_90, no GPU needed) compiles
// each, and the types are the toolkit's.
#include "core/compile/toolkit_headers.hpp"
#include "core/compile/nvrtc_compiler.hpp"

#include "support/helpers.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <kjit/kjit.hpp>

#include <fmt/format.h>

#include <filesystem>
#include <span>
#include <string>

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

constexpr std::string_view k_cuda_api_list[] = {"CUDAAPI"};
const std::span<const std::string_view> k_cuda_api(k_cuda_api_list);

}  // namespace

TEST_SUITE("toolkit_headers") {
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
    const std::string out = kjit::compile::host_api_types(header, k_cuda_api);
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
    const std::string out = kjit::compile::host_api_types(text, k_cuda_api);
    CHECK(out.size() < text.size() / 4);  // comments and declarations are most of it
    CHECK_FALSE(has(out, "cuMemAlloc("));
    CHECK_FALSE(has(out, "cuLaunchKernel("));
    CHECK_FALSE(has(out, "CUresult CUDAAPI"));
    for (const char* kept : {"CUdeviceptr", "CUtexObject", "CUDA_ERROR_NOT_READY", "CU_AD_FORMAT_FLOAT",
                             "CUDA_VERSION", "CUtensorMap", "CUdevResource"}) {
      CHECK_MESSAGE(has(out, kept), kept);
    }
  }

  TEST_CASE("a deprecation macro with arguments before the declaration: cusparse.h's shape") {
    const std::string header = R"(#define CUSPARSEAPI
#define CUSPARSE_DEPRECATED(new_func) __attribute__((deprecated("please use " #new_func " instead")))
typedef struct cusparseContext* cusparseHandle_t;
typedef enum { CUSPARSE_STATUS_SUCCESS = 0 } cusparseStatus_t;
CUSPARSE_DEPRECATED(cusparseSpMV)
cusparseStatus_t CUSPARSEAPI
cusparseScsrmv(cusparseHandle_t handle, int m, const float* alpha);
cusparseStatus_t CUSPARSEAPI cusparseCreate(cusparseHandle_t* handle);
CUSPARSE_DEPRECATED(cusparseSpMM) cusparseStatus_t CUSPARSEAPI cusparseScsrmm(cusparseHandle_t handle);
static inline int host_helper(int x) { return x + 1; }
)";
    constexpr std::string_view api[] = {"CUSPARSEAPI"};
    const std::string out = kjit::compile::host_api_types(header, api);
    INFO(out);
    for (const char* gone : {"cusparseScsrmv", "cusparseCreate", "cusparseScsrmm", "host_helper"}) CHECK_MESSAGE(!has(out, gone), gone);
    for (const char* kept : {"typedef struct cusparseContext* cusparseHandle_t;", "CUSPARSE_STATUS_SUCCESS = 0",
                             "#define CUSPARSE_DEPRECATED(new_func)"}) {
      CHECK_MESSAGE(has(out, kept), kept);
    }
  }

  TEST_CASE("a header is made only when a program asks for it, with the headers it includes") {
    CHECK(kjit::compile::toolkit_headers({}).empty());
    CHECK(kjit::compile::toolkit_headers({"vector", "my_header.cuh"}).empty());
    const auto cublas = kjit::compile::toolkit_headers({"cublas_v2.h"});
    auto names = [](const auto& list) {
      std::vector<std::string> n;
      for (const auto& [name, text] : list) n.emplace_back(name);
      return n;
    };
    const auto n = names(cublas);
    CHECK(std::find(n.begin(), n.end(), "cublas_v2.h") != n.end());
    CHECK(std::find(n.begin(), n.end(), "cublas_api.h") != n.end());  // cublas_v2.h includes it
    CHECK(std::find(n.begin(), n.end(), "cuda.h") == n.end());
    const auto again = kjit::compile::toolkit_headers({"cublas_api.h"});  // made once: the same text
    REQUIRE_FALSE(again.empty());
    CHECK(again.front().second.data() == cublas.front().second.data());
  }

  TEST_CASE("kernel files that include the toolkit's library headers for their types compile") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    const auto& dirs = kjit::compile::NvrtcCompiler::toolkit_include_dirs();
    auto in_toolkit = [&dirs](const std::string& h) {
      return std::any_of(dirs.begin(), dirs.end(), [&](const auto& d) { return std::filesystem::exists(d / h); });
    };
    const std::vector<std::pair<std::string, std::string>> uses = {
        {"cublas_v2.h", "cublasOperation_t op = CUBLAS_OP_T; cublasStatus_t s = CUBLAS_STATUS_SUCCESS; y[0] = float(op) + float(s) + float(CUBLAS_FILL_MODE_LOWER);"},
        {"cublas_api.h", "cublasComputeType_t c = CUBLAS_COMPUTE_32F; y[0] = float(c);"},
        {"cublasLt.h", "cublasLtOrder_t o = CUBLASLT_ORDER_COL; y[0] = float(o) + float(sizeof(cublasLtMatmulAlgo_t));"},
        {"curand.h", "curandRngType_t t = CURAND_RNG_PSEUDO_PHILOX4_32_10; curandStatus_t s = CURAND_STATUS_SUCCESS; y[0] = float(t) + float(s);"},
        {"cufft.h", "cufftType t = CUFFT_R2C; cufftComplex z; z.x = 1.0f; y[0] = float(t) + z.x;"},
        {"cusparse.h", "cusparseOperation_t op = CUSPARSE_OPERATION_NON_TRANSPOSE; y[0] = float(op) + float(CUSPARSE_INDEX_32I);"},
        {"cusolverDn.h", "cusolverEigMode_t m = CUSOLVER_EIG_MODE_VECTOR; cublasFillMode_t f = CUBLAS_FILL_MODE_UPPER; y[0] = float(m) + float(f);"},
        {"cudnn.h", "cudnnDataType_t t = CUDNN_DATA_FLOAT; y[0] = float(t) + float(CUDNN_MAJOR);"},
    };
    int compiled = 0;
    for (const auto& [header, body] : uses) {
      if (!in_toolkit(header)) {
        MESSAGE("not in this toolkit, not tested: ", header);
        continue;
      }
      INFO("#include <", header, ">");
      // As a project's kernel header includes it: from a header of the user's, on an include dir.
      const std::string common = fmt::format("#pragma once\n#include <{}>\nvoid host_setup(int device);\n", header);
      kjit::CompileResult r;
      CHECK_NOTHROW(r = rt.compile(kjit::Program("k.cu", fmt::format("#include \"common.cuh\"\nextern \"C\" __global__ void k(float* y) {{ {} }}\n", body))
                                       .header("common.cuh", common),
                                   {.arch = kjit::Arch::sm(90)}));
      CHECK(r.ptx.find(".entry k") != std::string::npos);
      ++compiled;
    }
    CHECK(compiled >= 6);  // CUDA 13 ships all but cuDNN
  }
}

// #52 item 7: `#include <cub/cub.cuh>`, the standard BlockReduce example, gave 100 NVRTC errors
// from Thrust's host launch code and no kjit line.
TEST_SUITE("toolkit_headers cub") {
  TEST_CASE("the CUB umbrella loses its device-wide algorithms and allocator and keeps the rest") {
    const std::string umbrella = "#pragma once\n#include <cub/config.cuh>\n#include <cub/block/block_reduce.cuh>\n"
                                 "#include <cub/device/device_reduce.cuh>\n  #include <cub/device/device_scan.cuh>\n"
                                 "#include <cub/warp/warp_reduce.cuh>\n#include <cub/util_allocator.cuh>\n"
                                 "#include <cub/util_type.cuh>\n";
    const std::string out = kjit::compile::device_side_umbrella(umbrella);
    CHECK(out.find("#include <cub/device/") == std::string::npos);
    CHECK(out.find("#include <cub/util_allocator.cuh>") == std::string::npos);
    for (const std::string kept : {"#include <cub/config.cuh>\n", "#include <cub/block/block_reduce.cuh>\n",
                                   "#include <cub/warp/warp_reduce.cuh>\n", "#include <cub/util_type.cuh>\n",
                                   "#pragma once\n"}) {
      CHECK_MESSAGE(out.find(kept) != std::string::npos, kept);
    }
  }

  TEST_CASE("the BlockReduce example with cub/cub.cuh compiles and a cub/device include says what to include") {
    const auto& dirs = kjit::compile::NvrtcCompiler::toolkit_include_dirs();
    if (!std::any_of(dirs.begin(), dirs.end(), [](const auto& d) { return std::filesystem::exists(d / "cub/cub.cuh"); })) {
      KJIT_SKIP("no CUB in this toolkit: nothing to compile");
    }
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    const std::string kernel = "__global__ void block_sum(const int* in, int* out) {\n"
                               "  using BlockReduce = cub::BlockReduce<int, 128>;\n"
                               "  __shared__ typename BlockReduce::TempStorage temp;\n"
                               "  int v = in[blockIdx.x * 128 + threadIdx.x];\n"
                               "  int s = BlockReduce(temp).Sum(v);\n"
                               "  if (threadIdx.x == 0) out[blockIdx.x] = s;\n"
                               "}\n";
    kjit::CompileResult r;
    REQUIRE_NOTHROW(r = rt.compile(kjit::Program("br.cu", "#include <cub/cub.cuh>\n" + kernel), {.arch = kjit::Arch::sm(90)}));
    CHECK(r.ptx.find(".entry _Z9block_sumPKiPi(") != std::string::npos);
    // A header of the user's own named cub/cub.cuh still wins.
    CHECK_THROWS_AS(rt.compile(kjit::Program("own.cu", "#include <cub/cub.cuh>\n" + kernel)
                                   .header("cub/cub.cuh", "#pragma once\n// not CUB\n"),
                               {.arch = kjit::Arch::sm(90)}),
                    kjit::CompileError);
    // A device-wide algorithm's header: one kjit line naming the headers a kernel includes instead.
    try {
      rt.compile(kjit::Program("dr.cu", "#include <cub/device/device_reduce.cuh>\n#include <cub/block/block_reduce.cuh>\n" +
                                            kernel),
                 {.arch = kjit::Arch::sm(90)});
      FAIL("compiled CUB's host dispatch");
    } catch (const kjit::CompileError& e) {
      const std::string log = e.log();
      const std::string line = "kjit: CUB's device-wide algorithms";
      REQUIRE_MESSAGE(log.find(line) != std::string::npos, log.substr(log.size() > 3000 ? log.size() - 3000 : 0));
      CHECK(log.find(line, log.find(line) + 1) == std::string::npos);  // once
      CHECK(log.find("<cub/block/block_reduce.cuh>") != std::string::npos);
      CHECK(log.find("<cub/cub.cuh>, which kjit serves without its host-side parts") != std::string::npos);
      // CCCL's own functions are not listed as the user's host definitions to guard.
      CHECK(log.find("tuning_scan.cuh:") == std::string::npos);
    }
  }
}

// compile::explain_missing_headers: where NVRTC cannot open an included header, the log says where
// it looked and which package ships the header (#39: torch's nvidia/cu13 has no CCCL headers).
#include "core/compile/missing_headers.hpp"

TEST_SUITE("missing_headers") {
  TEST_CASE("each missing header is named once with the folders searched and the package that ships it") {
    const std::string log = "k.cu(1): catastrophic error: cannot open source file \"cub/cub.cuh\"\n"
                            "k.cu(2): catastrophic error: cannot open source file \"cub/cub.cuh\"\n"
                            "k.cu(3): catastrophic error: cannot open source file \"my_helpers.cuh\"\n";
    const std::string note = kjit::compile::explain_missing_headers(log, {"/site/nvidia/cu13/include"});
    CHECK(has(note, "\"cub/cub.cuh\" is in none of the include folders NVRTC was given (/site/nvidia/cu13/include)"));
    CHECK(has(note, "nvidia-cuda-cccl"));
    CHECK(note.find("cub/cub.cuh", note.find("cub/cub.cuh") + 1) == std::string::npos);  // once
    CHECK(has(note, "\"my_helpers.cuh\""));
    CHECK(has(note, "pass its folder (-I DIR"));
    CHECK(kjit::compile::explain_missing_headers("k.cu(1): error: identifier \"x\" is undefined\n", {}).empty());
    CHECK(has(kjit::compile::explain_missing_headers(log, {}), "NVRTC's built-in headers only"));
  }

  TEST_CASE("the packages: CCCL, the math libraries, CUTLASS, torch's C++ API, the runtime headers") {
    using kjit::compile::header_package;
    CHECK(has(header_package("thrust/device_vector.h"), "nvidia-cuda-cccl"));
    CHECK(has(header_package("cuda/std/atomic"), "CCCL"));
    CHECK(has(header_package("cublasLt.h"), "nvidia-cublas"));
    CHECK(has(header_package("cudnn_frontend.h"), "cuDNN"));
    CHECK(has(header_package("cutlass/gemm/device/gemm.h"), "CUTLASS"));
    CHECK(has(header_package("torch/extension.h"), "PyTorch"));
    CHECK(has(header_package("cuda_fp16.h"), "nvidia-cuda-runtime"));
    CHECK(header_package("my_helpers.cuh").empty());
  }

  TEST_CASE("a compile that includes a header nowhere to be found says so in its log") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    try {
      (void)rt.compile(kjit::Program("k.cu", "#include <cutlass/cutlass.h>\n__global__ void k() {}\n"),
                       {.arch = kjit::Arch::sm(90)});
      FAIL("compiled without CUTLASS");
    } catch (const kjit::CompileError& e) {
      CHECK(has(e.log(), "cannot open source file"));
      CHECK(has(e.log(), "kjit: \"cutlass/cutlass.h\" is in none of the include folders NVRTC was given"));
      CHECK(has(e.log(), "CUTLASS"));
      for (const auto& d : kjit::compile::NvrtcCompiler::toolkit_include_dirs()) CHECK(has(e.log(), d.string()));
    }
  }
}
