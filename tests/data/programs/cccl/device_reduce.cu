// Written for kjit's tests in the shape of CUB's device examples: a device-wide reduction called from
// host code (CUB's host API, included directly) beside a kernel of the file's own.
#include <cub/device/device_reduce.cuh>
#include <cstdio>

__global__ void scale(int* d, int n, int factor) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) d[i] *= factor;
}

int main() {
  int n = 1 << 20;
  int *d_in = nullptr, *d_out = nullptr;
  scale<<<n / 256, 256>>>(d_in, n, 3);
  void* d_temp = nullptr;
  size_t temp_bytes = 0;
  cub::DeviceReduce::Sum(d_temp, temp_bytes, d_in, d_out, n);
  cudaMalloc(&d_temp, temp_bytes);
  cub::DeviceReduce::Sum(d_temp, temp_bytes, d_in, d_out, n);
  printf("%zu\n", temp_bytes);
  return 0;
}
