// A CUDA program without kjit for the hardware-counter tests: it opens the driver itself, loads a
// cubin the test compiled (extern "C" kernels sol_copy and sol_fma), launches a device-to-device
// copy of 512 MiB at bandwidth and an FMA-bound kernel once each, checks the copy and prints
// "copied ok". The GPU test runs it under `kjit profile --metrics` and under ncu.
//
//   kjit_raw_launcher CUBIN
#include <cuda.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

void* g_lib = nullptr;

template <class F>
F symbol(const char* name) {
  auto f = reinterpret_cast<F>(dlsym(g_lib, name));
  if (f == nullptr) {
    std::fprintf(stderr, "kjit_raw_launcher: the driver lacks %s\n", name);
    std::exit(1);
  }
  return f;
}

void check(CUresult r, const char* call) {
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "kjit_raw_launcher: %s failed: CUresult %d\n", call, static_cast<int>(r));
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: kjit_raw_launcher CUBIN\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  const std::string image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (image.empty()) {
    std::fprintf(stderr, "kjit_raw_launcher: cannot read %s\n", argv[1]);
    return 2;
  }
  g_lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (g_lib == nullptr) {
    std::fprintf(stderr, "kjit_raw_launcher: no CUDA driver: %s\n", dlerror());
    return 1;
  }
  check(symbol<decltype(&cuInit)>("cuInit")(0), "cuInit");
  CUdevice device = 0;
  check(symbol<decltype(&cuDeviceGet)>("cuDeviceGet")(&device, 0), "cuDeviceGet");
  CUcontext context = nullptr;
  check(symbol<decltype(&cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain")(&context, device), "cuDevicePrimaryCtxRetain");
  check(symbol<decltype(&cuCtxSetCurrent)>("cuCtxSetCurrent")(context), "cuCtxSetCurrent");
  int sms = 0;
  check(symbol<decltype(&cuDeviceGetAttribute)>("cuDeviceGetAttribute")(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                                                      device),
        "cuDeviceGetAttribute");
  CUmodule module = nullptr;
  check(symbol<decltype(&cuModuleLoadData)>("cuModuleLoadData")(&module, image.data()), "cuModuleLoadData");
  CUfunction copy = nullptr, fma = nullptr;
  auto get = symbol<decltype(&cuModuleGetFunction)>("cuModuleGetFunction");
  check(get(&copy, module, "sol_copy"), "cuModuleGetFunction(sol_copy)");
  check(get(&fma, module, "sol_fma"), "cuModuleGetFunction(sol_fma)");

  const std::size_t n4 = std::size_t{32} << 20;  // float4s: 512 MiB each way
  CUdeviceptr a = 0, b = 0, out = 0;
  auto alloc = symbol<decltype(&cuMemAlloc)>("cuMemAlloc_v2");
  check(alloc(&a, n4 * 16), "cuMemAlloc");
  check(alloc(&b, n4 * 16), "cuMemAlloc");
  check(alloc(&out, 1 << 16), "cuMemAlloc");
  // A pattern that differs per word: the copy is checked against it.
  std::vector<std::uint32_t> pattern(n4 * 4);
  for (std::size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<std::uint32_t>(i * 2654435761u) | 1u;
  check(symbol<decltype(&cuMemcpyHtoD)>("cuMemcpyHtoD_v2")(a, pattern.data(), n4 * 16), "cuMemcpyHtoD");
  check(symbol<decltype(&cuMemsetD32)>("cuMemsetD32_v2")(b, 0xDEADBEEF, n4 * 4), "cuMemsetD32");
  auto launch = symbol<decltype(&cuLaunchKernel)>("cuLaunchKernel");
  std::size_t n = n4;
  void* copy_params[] = {&a, &b, &n};
  check(launch(copy, static_cast<unsigned>(sms) * 8, 1, 1, 512, 1, 1, 0, nullptr, copy_params, nullptr), "cuLaunchKernel(sol_copy)");
  int iters = 20000;
  void* fma_params[] = {&out, &iters};
  check(launch(fma, static_cast<unsigned>(sms) * 16, 1, 1, 256, 1, 1, 0, nullptr, fma_params, nullptr), "cuLaunchKernel(sol_fma)");
  std::vector<std::uint32_t> back(pattern.size());
  check(symbol<decltype(&cuMemcpyDtoH)>("cuMemcpyDtoH_v2")(back.data(), b, n4 * 16), "cuMemcpyDtoH");
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < back.size(); ++i) wrong += back[i] != pattern[i];
  std::printf("kjit_raw_launcher: copied %s (%zu words wrong)\n", wrong == 0 ? "ok" : "WRONG", wrong);
  return wrong == 0 ? 0 : 1;
}
