// A tutorial's whole vector add, main() included: the host part inside #ifndef __CUDACC_RTC__,
// which NVRTC defines and nvcc does not, so that nvcc builds the program and kjit the kernel.
#ifndef __CUDACC_RTC__
#include <iostream>
#include <vector>
#endif

__global__ void vectorAdd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

#ifndef __CUDACC_RTC__
int main() {
  const int n = 1 << 20;
  std::vector<float> a(n, 1.0f), b(n, 2.0f), c(n);
  float *da, *db, *dc;
  cudaMalloc(&da, n * sizeof(float));
  cudaMalloc(&db, n * sizeof(float));
  cudaMalloc(&dc, n * sizeof(float));
  cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  vectorAdd<<<(n + 255) / 256, 256>>>(da, db, dc, n);
  cudaMemcpy(c.data(), dc, n * sizeof(float), cudaMemcpyDeviceToHost);
  std::cout << c[0] << std::endl;
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  return 0;
}
#endif
