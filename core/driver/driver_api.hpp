// kjit::driver::DriverApi: the CUDA driver entry points kjit uses, resolved at run time.
// libcuda.so.1 is opened on first use (dlopen), cuGetProcAddress gives each entry point at the
// driver API version kjit was built with; nothing links libcuda. The launch path's entry points
// (and the optional ones, whose presence decides how modules load) are resolved when the driver
// is opened, every other one on its first call (a process's first request pays for the few it
// uses, not for all of them); a driver older than the newest entry point's version is refused
// when it is opened, as before. driver::get() throws DriverNotFoundError when there is no usable
// driver; check() turns a CUresult into CudaError.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <fmt/format.h>

#include <atomic>
#include <string>
#include <string_view>
#include <utility>

namespace kjit::driver {

// Each entry point kjit calls (and no other: a driver lacking one disables kjit), with the ABI version whose signature kjit calls. The version is explicit:
// cuGetProcAddress at CUDA_VERSION would hand out newer ABIs with other signatures (CUDA 13's
// cuCtxSynchronize and cuCtxGetDevice take a context) than the prototypes in cuda.h.
#define KJIT_DRIVER_FUNCTIONS(X)                                                                      \
  X(cuInit, 2000) X(cuDriverGetVersion, 2020) X(cuGetErrorName, 6000) X(cuGetErrorString, 6000)       \
  X(cuDeviceGet, 2000) X(cuDeviceGetCount, 2000) X(cuDeviceGetName, 2000)                             \
  X(cuDeviceGetAttribute, 2000) X(cuDeviceTotalMem, 3020) X(cuDevicePrimaryCtxRetain, 7000)           \
  X(cuCtxSetCurrent, 4000) X(cuCtxGetCurrent, 4000) X(cuCtxGetDevice, 2000)                          \
  X(cuCtxSynchronize, 2000) X(cuModuleLoadDataEx, 2010) X(cuModuleLoadData, 2000)                    \
  X(cuModuleUnload, 2000) X(cuModuleGetFunction, 2000) X(cuModuleGetGlobal, 3020) X(cuModuleGetFunctionCount, 12040)             \
  X(cuModuleEnumerateFunctions, 12040) X(cuFuncGetName, 12030) X(cuFuncGetParamInfo, 12040)         \
  X(cuFuncGetAttribute, 2020) X(cuFuncSetAttribute, 9000) X(cuLaunchKernel, 4000)                    \
  X(cuLaunchKernelEx, 11060) \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050) X(cuOccupancyMaxPotentialBlockSize, 6050)    \
  X(cuStreamCreate, 2000) X(cuStreamDestroy, 4000) X(cuStreamSynchronize, 2000) X(cuStreamWaitEvent, 3020) \
  X(cuEventCreate, 2000) X(cuEventDestroy, 4000) X(cuEventRecord, 2000) X(cuEventSynchronize, 2000)  \
  X(cuEventElapsedTime, 2000) X(cuMemAlloc, 3020) X(cuMemFree, 3020) X(cuMemcpyHtoD, 3020)           \
  X(cuMemcpyDtoH, 3020) X(cuMemcpyHtoDAsync, 3020) X(cuMemcpyDtoHAsync, 3020) X(cuMemcpyDtoDAsync, 3020) X(cuMemsetD8, 3020) X(cuMemsetD8Async, 3020)      \
  X(cuMemsetD32Async, 3020) X(cuStreamBeginCapture, 10010) X(cuStreamEndCapture, 10000)             \
  X(cuGraphInstantiateWithFlags, 11040) X(cuGraphLaunch, 10000) X(cuGraphExecDestroy, 10000)          \
  X(cuGraphDestroy, 10000) X(cuStreamIsCapturing, 10000)

// Entry points kjit uses when the driver has them: context-independent loading (CUDA 12.0+).
// Without them (nullptr), a module is loaded per context (cuModuleLoadDataEx).
#define KJIT_DRIVER_OPTIONAL_FUNCTIONS(X)                                                             \
  X(cuLibraryLoadData, 12000) X(cuLibraryUnload, 12000) X(cuLibraryGetKernel, 12000)                \
  X(cuKernelGetFunction, 12000) X(cuLibraryGetGlobal, 12000) X(cuLibraryGetKernelCount, 12040)      \
  X(cuLibraryEnumerateKernels, 12040) X(cuKernelGetName, 12030) X(cuStreamGetCtx, 9020)

// One entry point, called as the function it is (api.cuLaunchKernel(...)): a relaxed-cost atomic
// load (a plain load on x86-64) and the call. Until it is resolved it holds a function of kjit's
// that resolves it, stores the driver's and calls that (two threads may both resolve: the same
// address). False when the driver has none (an optional entry point).
template <class Fn>
class DriverEntry;
template <class... A>
class DriverEntry<CUresult (*)(A...)> {
public:
  using Fn = CUresult (*)(A...);
  CUresult operator()(A... a) const { return m_fn.load(std::memory_order_acquire)(a...); }
  explicit operator bool() const noexcept { return m_fn.load(std::memory_order_acquire) != nullptr; }
  void set(Fn fn) noexcept { m_fn.store(fn, std::memory_order_release); }

private:
  std::atomic<Fn> m_fn{nullptr};
};

struct DriverApi {
#define KJIT_DECLARE_DRIVER_FN(name, version) DriverEntry<PFN_##name##_v##version> name;
  KJIT_DRIVER_FUNCTIONS(KJIT_DECLARE_DRIVER_FN)
  KJIT_DRIVER_OPTIONAL_FUNCTIONS(KJIT_DECLARE_DRIVER_FN)
#undef KJIT_DECLARE_DRIVER_FN
  // Whether every entry point of context-independent loading resolved.
  bool has_libraries() const noexcept {
    return cuLibraryLoadData && cuLibraryUnload && cuLibraryGetKernel && cuKernelGetFunction && cuLibraryGetGlobal &&
           cuLibraryGetKernelCount && cuLibraryEnumerateKernels && cuKernelGetName && cuStreamGetCtx;
  }
  int driver_version = 0;  // from cuDriverGetVersion, e.g. 13000
};

// Makes `context` current on this thread when it is not already (asking the driver which one is:
// a thread-local read inside libcuda) and leaves it current. For kjit's own calls that need a
// context use ContextGuard, which restores what it found. Throws CudaError.
void make_current(CUcontext context, const DriverApi& api);

// The primary context of device `ordinal`, retained on first use and kept for the life of the
// process (a lock-free read after that). Throws UsageError for an ordinal past kjit's table and
// CudaError when the driver refuses.
CUcontext primary_context(int ordinal);

// What a ContextGuard restores: always what it found, even no context (a launch: torch's
// CUDAGuard), or that only when it found one (kjit's other calls: where none was current, the
// device's context stays current, as the CUDA runtime's first call on a thread leaves it, so that
// a C++ program's own driver calls after a kjit call keep working).
enum class Restore { always, unless_none };

// Like torch's CUDAGuard: makes `context` current for one scope and restores the context it found
// when the scope ends (see Restore). kjit keeps no idea of "current" of its own: every guard asks
// the driver, so a caller (torch, CuPy) that changed the device in between is never overruled.
// Allocates nothing, takes no lock; a failed switch throws CudaError.
class ContextGuard {
public:
  ContextGuard(CUcontext context, const DriverApi& api, Restore restore = Restore::unless_none) : m_api(api) {
    api.cuCtxGetCurrent(&m_previous);
    switch_to(context, restore);
  }
  // The same when the caller read the current context already.
  ContextGuard(CUcontext context, CUcontext current, const DriverApi& api, Restore restore)
      : m_api(api), m_previous(current) {
    switch_to(context, restore);
  }
  ~ContextGuard() {
    if (m_switched) m_api.cuCtxSetCurrent(m_previous);
  }
  ContextGuard(const ContextGuard&) = delete;
  ContextGuard& operator=(const ContextGuard&) = delete;
  CUcontext previous() const noexcept { return m_previous; }

private:
  void switch_to(CUcontext context, Restore restore) {
    if (context == m_previous || context == nullptr) return;
    check_switch(m_api.cuCtxSetCurrent(context));
    m_switched = m_previous != nullptr || restore == Restore::always;
  }
  static void check_switch(CUresult r);
  const DriverApi& m_api;
  CUcontext m_previous = nullptr;
  bool m_switched = false;
};

// The loaded driver; throws DriverNotFoundError (with the compile-only hint) when absent.
const DriverApi& get();
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
// The same with <what> formatted only on failure: a success formats nothing.
template <class... Args>
  requires(sizeof...(Args) > 0)
inline void check(CUresult result, const char* call, fmt::format_string<Args...> what, Args&&... args) {
  if (result != CUDA_SUCCESS) [[unlikely]] throw_cuda_error(result, call, fmt::format(what, std::forward<Args>(args)...));
}

}  // namespace kjit::driver

