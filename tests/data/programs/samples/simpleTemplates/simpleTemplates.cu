// Written for kjit's tests in the shape of a samples project's simpleTemplates: a template kernel
// launched from main() with literal arguments (nvcc compiles those instances; kjit compiles them by
// name) and from a host function template (an instance kjit names in a warning).
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <cuda_runtime.h>
#include <helper_cuda.h>
#include "sharedmem.cuh"

template <class T>
__global__ void testKernel(T *g_idata, T *g_odata) {
  SharedMemory<T> smem;
  T *sdata = smem.getPointer();
  const unsigned int tid = threadIdx.x;
  sdata[tid] = g_idata[tid];
  __syncthreads();
  sdata[tid] = (T)blockDim.x * sdata[tid];
  __syncthreads();
  g_odata[tid] = sdata[tid];
}

template <class T>
void computeGold(T *reference, T *idata, const unsigned int len) {
  const T T_len = static_cast<T>(len);
  for (unsigned int i = 0; i < len; ++i) reference[i] = idata[i] * T_len;
}

template <class T>
void runTest(int argc, char **argv, int len) {
  T *d_idata = nullptr;
  T *d_odata = nullptr;
  testKernel<T><<<1, len, len * sizeof(T)>>>(d_idata, d_odata);
}

int main(int argc, char **argv) {
  runTest<float>(argc, argv, 64);
  int *d = nullptr;
  testKernel<int><<<1, 32, 32 * sizeof(int)>>>(d, d);
  return 0;
}
