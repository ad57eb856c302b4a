#include "core/driver/driver_api.hpp"

#include <kjit/error.hpp>

#include "core/base/dynamic_library.hpp"

#include <fmt/format.h>


#include <mutex>

namespace kjit::driver {
namespace {

struct Loader {
  DriverApi api;
  std::string error;  // empty when loaded
  bool ok = false;

  Loader() {
    // The one loader of run-time libraries (base/dynamic_library); every other entry point comes
    // from cuGetProcAddress at the version kjit was written against.
    base::DynamicLibrary lib = base::DynamicLibrary::open_first({"libcuda.so.1"});
    if (!lib) {
      error = fmt::format("dlopen failed: {}", lib.why());  // why: libcuda.so.1: dlerror's reason
      return;
    }
    using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
    GetProc get_proc = nullptr;
    lib.resolve(get_proc, "cuGetProcAddress_v2");
    if (get_proc == nullptr) {
      error = "libcuda.so.1 has no cuGetProcAddress_v2 (driver older than CUDA 12)";
      return;
    }
    std::string missing;
#define KJIT_RESOLVE_DRIVER_FN(name, version)                                                             \
    {                                                                                              \
      void* p = nullptr;                                                                           \
      CUdriverProcAddressQueryResult status{};                                                     \
      if (get_proc(#name, &p, version, CU_GET_PROC_ADDRESS_DEFAULT, &status) == CUDA_SUCCESS      \
          && p != nullptr) {                                                                       \
        api.name = reinterpret_cast<decltype(api.name)>(p);                                       \
      } else {                                                                                     \
        missing += missing.empty() ? #name : ", " #name;                                           \
      }                                                                                            \
    }
    KJIT_DRIVER_FUNCTIONS(KJIT_RESOLVE_DRIVER_FN)
#undef KJIT_RESOLVE_DRIVER_FN
#define KJIT_RESOLVE_OPTIONAL_FN(name, version)                                                        \
    {                                                                                              \
      void* p = nullptr;                                                                           \
      CUdriverProcAddressQueryResult status{};                                                     \
      if (get_proc(#name, &p, version, CU_GET_PROC_ADDRESS_DEFAULT, &status) == CUDA_SUCCESS)     \
        api.name = reinterpret_cast<decltype(api.name)>(p);                                       \
    }
    KJIT_DRIVER_OPTIONAL_FUNCTIONS(KJIT_RESOLVE_OPTIONAL_FN)
#undef KJIT_RESOLVE_OPTIONAL_FN
    if (!missing.empty()) {
      error = fmt::format("the driver in libcuda.so.1 lacks entry points kjit needs ({}); kjit needs a "
                          "driver for CUDA 12.4 or newer", missing);
      return;
    }
    CUresult r = api.cuInit(0);
    if (r != CUDA_SUCCESS) {
      error = fmt::format("cuInit(0) failed: {}", describe(r));
      return;
    }
    api.cuDriverGetVersion(&api.driver_version);
    ok = true;
  }
};

Loader* g_loader = nullptr;
const DriverApi* g_loaded = nullptr;
std::once_flag g_once;

Loader& loader() {
  std::call_once(g_once, [] {
    g_loader = new Loader();  // never destroyed: kernels may be unloaded during static destruction
    if (g_loader->ok) g_loaded = &g_loader->api;
  });
  return *g_loader;
}

}  // namespace

void make_current(CUcontext context, const DriverApi& api) {
  CUcontext current = nullptr;
  api.cuCtxGetCurrent(&current);
  if (current != context) check(api.cuCtxSetCurrent(context), "cuCtxSetCurrent", "making a kernel's context current");
}

void ContextGuard::check_switch(CUresult r) { check(r, "cuCtxSetCurrent", "switching to a device's context for one call"); }

const DriverApi* try_driver(std::string* reason) noexcept {
  Loader& l = loader();
  if (!l.ok && reason) *reason = l.error;
  return l.ok ? &l.api : nullptr;
}

const DriverApi& get() {
  std::string reason;
  if (const DriverApi* api = try_driver(&reason)) return *api;
  throw DriverNotFoundError(fmt::format(
      "no CUDA driver found: {}; compile-only features (compiling to PTX and cubin "
      "for a named arch, caching, dumping, diffing, warming) still work", reason));
}

const DriverApi* loaded_driver() noexcept { return g_loaded; }

std::string describe(CUresult result) {
  const DriverApi* api = g_loaded;
  const char* name = nullptr;
  const char* text = nullptr;
  if (api) {
    api->cuGetErrorName(result, &name);
    api->cuGetErrorString(result, &text);
  }
  if (name == nullptr) return fmt::format("CUresult {}", static_cast<int>(result));
  return text ? fmt::format("{}: {}", name, text) : std::string(name);
}

void throw_cuda_error(CUresult result, const char* call, std::string_view what) {
  const DriverApi* api = g_loaded;
  const char* name = nullptr;
  if (api) api->cuGetErrorName(result, &name);
  throw CudaError(static_cast<int>(result), name ? name : fmt::format("CUresult {}", static_cast<int>(result)),
                  call, fmt::format("{}: {} failed: {}", what, call, describe(result)));
}

}  // namespace kjit::driver
