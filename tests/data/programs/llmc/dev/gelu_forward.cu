/*
Written for kjit's tests in the shape of llm.c's dev/cuda kernels: two kernel versions, host
launchers and a CPU reference, main() choosing a version.
*/
#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime.h>
#include "common.h"

#define GELU_SCALING_FACTOR sqrtf(2.0f / M_PI)

void gelu_forward_cpu(float* out, const float* inp, int N) {
  for (int i = 0; i < N; i++) {
    float x = inp[i];
    float cube = 0.044715f * x * x * x;
    out[i] = 0.5f * x * (1.0f + tanhf(GELU_SCALING_FACTOR * (x + cube)));
  }
}

__global__ void gelu_forward_kernel1(float* out, const float* inp, int N) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) {
    float xi = inp[i];
    float cube = 0.044715f * xi * xi * xi;
    out[i] = 0.5f * xi * (1.0f + tanhf(GELU_SCALING_FACTOR * (xi + cube)));
  }
}

__global__ void gelu_forward_kernel2(float* out, const float* inp, int64_t N) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) out[i] = inp[i] * 0.5f * (1.0f + erff(inp[i] * 0.70710678f)) + warpReduceSum(0.0f);
}

void gelu_forward1(float* out, const float* inp, int N, const int block_size) {
  const int grid_size = ceil_div(N, block_size);
  gelu_forward_kernel1<<<grid_size, block_size>>>(out, inp, N);
  cudaCheck(cudaGetLastError());
}

void gelu_forward2(float* out, const float* inp, int N, const int block_size) {
  const int grid_size = ceil_div(N, block_size);
  gelu_forward_kernel2<<<grid_size, block_size>>>(out, inp, N);
  cudaCheck(cudaGetLastError());
}

int main(int argc, char **argv) {
  srand(0);
  int B = 8, T = 1024, C = 768;
  float* inp = make_random_float(B * T * C);
  int kernel_num = argc > 1 ? atoi(argv[1]) : 1;
  printf("Using kernel %d on thread %ld\n", kernel_num, thread_id());
  float* d_out = nullptr;
  if (kernel_num == 1) gelu_forward1(d_out, d_out, B * T * C, 128);
  else gelu_forward2(d_out, d_out, B * T * C, 128);
  free(inp);
  return 0;
}
