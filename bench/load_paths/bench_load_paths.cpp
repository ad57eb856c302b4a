// Fresh-process cost of loading one cubin and getting a launchable function, by driver path (GPU):
//   bench_load_paths MODE CUBIN   MODE: mod | lib | lib-preserved | lib-getmodule | lib-kernel-only
// CUBIN holds an extern "C" kernel `square(float*, float*, int)`. Run once per process (a fresh
// process each time: the first load is what it measures); the figures of 2026-11-26 on an H100
// are bench/results/2026-11-26-h100-remote-hit/load_paths.txt. Links the driver itself (its link
// stub), so it is built only on request: cmake --build build --target bench_load_paths.
#include <cuda.h>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char* s; cuGetErrorName(r_, &s); std::fprintf(stderr, "%s: %s\n", #x, s); return 2; } } while (0)
int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s mod|lib|lib-preserved|lib-getmodule|lib-kernel-only CUBIN\n", argv[0]);
    return 2;
  }
  std::string mode = argv[1];
  std::ifstream f(argv[2], std::ios::binary); std::stringstream ss; ss << f.rdbuf(); std::string img = ss.str();
  CK(cuInit(0)); CUdevice d; CK(cuDeviceGet(&d, 0)); CUcontext c; CK(cuDevicePrimaryCtxRetain(&c, d)); CK(cuCtxSetCurrent(c));
  using C = std::chrono::steady_clock;
  auto t0 = C::now(); double a = 0;
  CUfunction fn = nullptr;
  if (mode == "mod") {
    CUmodule m; CK(cuModuleLoadData(&m, img.data())); a = std::chrono::duration<double, std::micro>(C::now() - t0).count();
    CK(cuModuleGetFunction(&fn, m, "square"));
  } else {
    CUlibrary lib;
    CUlibraryOption opt[1] = {CU_LIBRARY_BINARY_IS_PRESERVED}; void* val[1] = {(void*)1};
    if (mode == "lib-preserved") CK(cuLibraryLoadData(&lib, img.data(), nullptr, nullptr, 0, opt, val, 1));
    else CK(cuLibraryLoadData(&lib, img.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    a = std::chrono::duration<double, std::micro>(C::now() - t0).count();
    CUkernel k; CK(cuLibraryGetKernel(&k, lib, "square"));
    if (mode == "lib" || mode == "lib-preserved") CK(cuKernelGetFunction(&fn, k));
    else if (mode == "lib-getmodule") { CUmodule m; CK(cuLibraryGetModule(&m, lib)); CK(cuModuleGetFunction(&fn, m, "square")); }
    else if (mode == "lib-kernel-only") fn = (CUfunction)k;
  }
  double total = std::chrono::duration<double, std::micro>(C::now() - t0).count();
  // first launch, to see where deferred work lands
  CUdeviceptr p; CK(cuMemAlloc(&p, 1024 * 4)); int n = 1024; void* args[] = {&p, &p, &n};
  auto t1 = C::now();
  CK(cuLaunchKernel(fn, 4, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
  double launch = std::chrono::duration<double, std::micro>(C::now() - t1).count();
  CK(cuCtxSynchronize());
  std::printf("%s load %.1f total %.1f first-launch %.1f\n", mode.c_str(), a, total, launch);
}
