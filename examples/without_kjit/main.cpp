// A CUDA program that does not link kjit (it opens the driver itself and launches a PTX kernel
// through the driver API): what `kjit profile` profiles through CUDA's injection.
//
//   kjit profile --trace trace.json -- without_kjit [launches]
#include <cuda.h>
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

const char* k_ptx = R"(
.version 8.0
.target sm_75
.address_size 64
.visible .entry raw_saxpy(.param .u64 px, .param .u64 py, .param .f32 pa, .param .u32 pn) {
  .reg .pred %p;
  .reg .b32 %r<6>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [px];
  ld.param.u64 %rd2, [py];
  ld.param.f32 %f1, [pa];
  ld.param.u32 %r1, [pn];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p, %r5, %r1;
  @%p bra DONE;
  cvta.to.global.u64 %rd3, %rd1;
  cvta.to.global.u64 %rd4, %rd2;
  mul.wide.u32 %rd5, %r5, 4;
  add.s64 %rd6, %rd3, %rd5;
  add.s64 %rd7, %rd4, %rd5;
  ld.global.f32 %f2, [%rd6];
  ld.global.f32 %f3, [%rd7];
  fma.rn.f32 %f3, %f1, %f2, %f3;
  st.global.f32 [%rd7], %f3;
DONE:
  ret;
}
)";

template <class F>
F symbol(void* lib, const char* name) {
  auto f = reinterpret_cast<F>(dlsym(lib, name));
  if (f == nullptr) {
    std::fprintf(stderr, "without_kjit: the driver lacks %s\n", name);
    std::exit(1);
  }
  return f;
}

void check(CUresult r, const char* call) {
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "without_kjit: %s failed: CUresult %d\n", call, static_cast<int>(r));
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int launches = argc > 1 ? std::atoi(argv[1]) : 100;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (lib == nullptr) {
    std::fprintf(stderr, "without_kjit: no CUDA driver: %s\n", dlerror());
    return 1;
  }
  check(symbol<decltype(&cuInit)>(lib, "cuInit")(0), "cuInit");
  CUdevice device = 0;
  check(symbol<decltype(&cuDeviceGet)>(lib, "cuDeviceGet")(&device, 0), "cuDeviceGet");
  CUcontext context = nullptr;
  check(symbol<decltype(&cuDevicePrimaryCtxRetain)>(lib, "cuDevicePrimaryCtxRetain")(&context, device),
        "cuDevicePrimaryCtxRetain");
  check(symbol<decltype(&cuCtxSetCurrent)>(lib, "cuCtxSetCurrent")(context), "cuCtxSetCurrent");
  CUmodule module = nullptr;
  check(symbol<decltype(&cuModuleLoadData)>(lib, "cuModuleLoadData")(&module, k_ptx), "cuModuleLoadData");
  CUfunction f = nullptr;
  check(symbol<decltype(&cuModuleGetFunction)>(lib, "cuModuleGetFunction")(&f, module, "raw_saxpy"),
        "cuModuleGetFunction");

  const unsigned n = 1u << 20;
  std::vector<float> x(n), y(n);
  for (unsigned i = 0; i < n; ++i) x[i] = 0.5f + static_cast<float>(i % 97) / 97.0f, y[i] = 1.0f + static_cast<float>(i % 13);
  CUdeviceptr dx = 0, dy = 0;
  auto alloc = symbol<decltype(&cuMemAlloc)>(lib, "cuMemAlloc_v2");
  check(alloc(&dx, n * sizeof(float)), "cuMemAlloc");
  check(alloc(&dy, n * sizeof(float)), "cuMemAlloc");
  auto htod = symbol<decltype(&cuMemcpyHtoD)>(lib, "cuMemcpyHtoD_v2");
  check(htod(dx, x.data(), n * sizeof(float)), "cuMemcpyHtoD");
  check(htod(dy, y.data(), n * sizeof(float)), "cuMemcpyHtoD");
  float a = 0.25f;
  void* params[] = {&dx, &dy, &a, const_cast<unsigned*>(&n)};
  auto launch = symbol<decltype(&cuLaunchKernel)>(lib, "cuLaunchKernel");
  for (int i = 0; i < launches; ++i) check(launch(f, n / 256, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel");
  std::vector<float> out(n);
  check(symbol<decltype(&cuMemcpyDtoH)>(lib, "cuMemcpyDtoH_v2")(out.data(), dy, n * sizeof(float)), "cuMemcpyDtoH");
  int wrong = 0;
  for (unsigned i = 0; i < n; ++i) {
    const float expected = y[i] + static_cast<float>(launches) * a * x[i];
    wrong += std::fabs(out[i] - expected) > 1e-3f * std::fabs(expected);
  }
  std::printf("without_kjit: %d launches of raw_saxpy over %u floats, %d wrong\n", launches, n, wrong);
  return wrong == 0 ? 0 : 1;
}
