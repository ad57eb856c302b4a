// Written for kjit's tests in the shape of a PyTorch-extension learning repository: the kernel file
// a C++ wrapper calls through launch_add2, compiled by the extension's build.
#include <cuda_runtime.h>

__global__ void add2_kernel(float* c, const float* a, const float* b, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    c[i] = a[i] + b[i];
  }
}

void launch_add2(float* c, const float* a, const float* b, int n) {
  dim3 grid((n + 1023) / 1024);
  dim3 block(1024);
  add2_kernel<<<grid, block>>>(c, a, b, n);
}
