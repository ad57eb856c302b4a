// kjit::runtime::DriverApi: the CUDA driver entry points kjit uses, resolved at run time.
// libcuda.so.1 is opened on first use (dlopen), cuGetProcAddress gives each entry point at the
// driver API version kjit was built with; nothing links libcuda. driver() throws
// DriverNotFoundError when there is no usable driver; check() turns a CUresult into CudaError.
#pragma once

#include <cuda.h>

#include <string>
#include <string_view>

namespace kjit::runtime {

#define KJIT_DRIVER_FUNCTIONS(X)                                                                  \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGet)            \
  X(cuDeviceGetCount) X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem)              \
  X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxGetCurrent)  \
  X(cuCtxGetDevice) X(cuCtxSynchronize) X(cuModuleLoadDataEx) X(cuModuleUnload)                   \
  X(cuModuleGetFunction) X(cuModuleGetFunctionCount) X(cuModuleEnumerateFunctions)               \
  X(cuFuncGetName) X(cuFuncGetParamInfo) X(cuFuncGetAttribute) X(cuFuncSetAttribute)              \
  X(cuLaunchKernel) X(cuLaunchKernelEx) X(cuLaunchCooperativeKernel)                              \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor) X(cuOccupancyMaxPotentialBlockSize)              \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuEventCreate) X(cuEventDestroy)  \
  X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime) X(cuMemAlloc) X(cuMemFree)         \
  X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoDAsync) X(cuMemsetD8) X(cuMemsetD8Async)          \
  X(cuMemsetD32Async) X(cuModuleLoadData)

struct DriverApi {
#define KJIT_DECLARE_DRIVER_FN(name) decltype(&::name) name = nullptr;
  KJIT_DRIVER_FUNCTIONS(KJIT_DECLARE_DRIVER_FN)
#undef KJIT_DECLARE_DRIVER_FN
  int driver_version = 0;  // from cuDriverGetVersion, e.g. 13000
};

// The loaded driver; throws DriverNotFoundError (with the compile-only hint) when absent.
const DriverApi& driver();
// The loaded driver or nullptr, without trying to load it (for the launch path, after a load).
const DriverApi* loaded_driver() noexcept;
// nullptr and a reason when the driver cannot be loaded (never throws).
const DriverApi* try_driver(std::string* reason = nullptr) noexcept;

// "CUDA_ERROR_INVALID_VALUE: invalid argument" for a result (works without a driver).
std::string describe(CUresult result);
[[noreturn]] void throw_cuda_error(CUresult result, const char* call, std::string_view what);
// Throws CudaError "<what>: <call> failed: CUDA_ERROR_X: text" when result is not success.
inline void check(CUresult result, const char* call, std::string_view what) {
  if (result != CUDA_SUCCESS) [[unlikely]] throw_cuda_error(result, call, what);
}

}  // namespace kjit::runtime
