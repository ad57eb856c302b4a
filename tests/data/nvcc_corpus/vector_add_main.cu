// A tutorial's whole vector add as it is written for nvcc: host code and all (#52 item 8). kjit
// leaves the host function definitions out, as nvcc compiles them for the host only.
#include <cstdio>
#include <iostream>
#include <vector>

#define CUDA_CHECK(call)                                                             \
  do {                                                                               \
    cudaError_t e = (call);                                                          \
    if (e != cudaSuccess) {                                                          \
      std::printf("%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e));         \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

__global__ void vectorAdd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

void init(std::vector<float>& v, float x) {
  for (auto& e : v) e = x;
}

int main() {
  const int n = 1 << 20;
  std::vector<float> a(n), b(n), c(n);
  init(a, 1.0f);
  init(b, 2.0f);
  float *da, *db, *dc;
  CUDA_CHECK(cudaMalloc(&da, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&db, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&dc, n * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  vectorAdd<<<(n + 255) / 256, 256>>>(da, db, dc, n);
  CUDA_CHECK(cudaMemcpy(c.data(), dc, n * sizeof(float), cudaMemcpyDeviceToHost));
  std::cout << "c[0] = " << c[0] << std::endl;
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  return 0;
}
