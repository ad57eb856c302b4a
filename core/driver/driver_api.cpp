#include "core/driver/driver_api.hpp"

#include <kjit/error.hpp>

#include "core/base/dynamic_library.hpp"

#include <fmt/format.h>

#include <mutex>
#include <string_view>

namespace kjit::driver {
namespace {

using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

// The one table (the Loader's) and libcuda's resolver, for the entry points resolved on first call.
DriverApi* g_table = nullptr;
GetProc g_get_proc = nullptr;

// The entry points of KJIT_DRIVER_FUNCTIONS resolved when the driver is opened: what opening it
// calls and the launch path's (a launch never asks cuGetProcAddress).
constexpr bool eager(std::string_view name) {
  return name == "cuInit" || name == "cuDriverGetVersion" || name == "cuCtxGetCurrent" || name == "cuCtxSetCurrent" ||
         name == "cuLaunchKernel" || name == "cuLaunchKernelEx";
}

// The newest ABI version among the entry points kjit needs: a driver older than that lacks some.
constexpr int k_newest_version = [] {
  int newest = 0;
#define KJIT_NEWEST_VERSION(name, version) newest = newest > version ? newest : version;
  KJIT_DRIVER_FUNCTIONS(KJIT_NEWEST_VERSION)
#undef KJIT_NEWEST_VERSION
  return newest;
}();

void* resolve(const char* name, int version) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult status{};
  if (g_get_proc(name, &p, version, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS) return nullptr;
  return p;
}

// An entry point's first call: resolves it, stores it in the table and calls it. A driver that has
// it not (kjit checked the version, so this is a driver that lies about it) answers NOT_FOUND, which
// the caller's check turns into a CudaError naming the call.
template <class Fn, auto Field, const char* Name, int Version>
struct FirstCall;
template <class... A, auto Field, const char* Name, int Version>
struct FirstCall<CUresult (*)(A...), Field, Name, Version> {
  static CUresult call(A... a) {
    using Fn = CUresult (*)(A...);
    const auto fn = reinterpret_cast<Fn>(resolve(Name, Version));
    if (fn == nullptr) return CUDA_ERROR_NOT_FOUND;
    (g_table->*Field).set(fn);
    return fn(a...);
  }
};

#define KJIT_DRIVER_NAME(name, version) constexpr char k_name_##name[] = #name;
KJIT_DRIVER_FUNCTIONS(KJIT_DRIVER_NAME)
#undef KJIT_DRIVER_NAME

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
    GetProc get_proc = nullptr;
    lib.resolve(get_proc, "cuGetProcAddress_v2");
    if (get_proc == nullptr) {
      error = "libcuda.so.1 has no cuGetProcAddress_v2 (driver older than CUDA 12)";
      return;
    }
    g_get_proc = get_proc;
    g_table = &api;
    std::string missing;
#define KJIT_RESOLVE_DRIVER_FN(name, version)                                                             \
    if (eager(#name)) {                                                                                  \
      if (void* p = resolve(#name, version)) {                                                           \
        api.name.set(reinterpret_cast<PFN_##name##_v##version>(p));                                      \
      } else {                                                                                           \
        missing += missing.empty() ? #name : ", " #name;                                                 \
      }                                                                                                  \
    } else {                                                                                             \
      api.name.set(&FirstCall<PFN_##name##_v##version, &DriverApi::name, k_name_##name, version>::call); \
    }
    KJIT_DRIVER_FUNCTIONS(KJIT_RESOLVE_DRIVER_FN)
#undef KJIT_RESOLVE_DRIVER_FN
#define KJIT_RESOLVE_OPTIONAL_FN(name, version)                                                        \
    if (void* p = resolve(#name, version)) api.name.set(reinterpret_cast<PFN_##name##_v##version>(p));
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
    if (api.driver_version < k_newest_version) {  // the entry points resolved on first call: all there?
#define KJIT_TOO_NEW(name, version) \
      if (version > api.driver_version) missing += missing.empty() ? #name : ", " #name;
      KJIT_DRIVER_FUNCTIONS(KJIT_TOO_NEW)
#undef KJIT_TOO_NEW
      error = fmt::format("the driver in libcuda.so.1 (CUDA {}.{}) lacks entry points kjit needs ({}); kjit needs a "
                          "driver for CUDA 12.4 or newer", api.driver_version / 1000, api.driver_version % 1000 / 10,
                          missing);
      return;
    }
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
