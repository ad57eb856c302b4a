// Written for kjit's tests in the shape of llm.c's dev/cuda/common.h: host variables, host helpers,
// a host launch template, <sys/syscall.h> and <omp.h>, and device helpers beside them.
#pragma once
#include <stdlib.h>
#include <stdio.h>
#include <float.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <omp.h>
#include <cuda_runtime.h>

extern cudaDeviceProp deviceProp;
cudaDeviceProp deviceProp;
static float* d_qkvr;

template<class T>
__host__ __device__ T ceil_div(T dividend, T divisor) {
  return (dividend + divisor - 1) / divisor;
}

__device__ float warpReduceSum(float val) {
  for (int offset = 16; offset > 0; offset /= 2) {
    val += __shfl_xor_sync(0xFFFFFFFF, val, offset);
  }
  return val;
}

void cuda_check(cudaError_t error, const char *file, int line) {
  if (error != cudaSuccess) {
    printf("[CUDA ERROR] at file %s:%d:\n%s\n", file, line, cudaGetErrorString(error));
    exit(EXIT_FAILURE);
  }
}
#define cudaCheck(err) (cuda_check(err, __FILE__, __LINE__))

inline long thread_id() { return syscall(SYS_gettid); }

float* make_random_float(size_t N) {
  float* arr = (float*)malloc(N * sizeof(float));
  for (size_t i = 0; i < N; i++) arr[i] = ((float)rand() / RAND_MAX) * 2.0 - 1.0;
  return arr;
}

template<class Kernel, class... KernelArgs>
float benchmark_kernel(int repeats, Kernel kernel, KernelArgs&&... kernel_args) {
  cudaEvent_t start, stop;
  cudaCheck(cudaEventCreate(&start));
  cudaCheck(cudaEventCreate(&stop));
  float elapsed_time = 0.f;
  for (int i = 0; i < repeats; i++) {
    kernel(std::forward<KernelArgs>(kernel_args)...);
  }
  return elapsed_time / repeats;
}
