// Written for kjit's tests in the shape of a samples project's matrixMul: <cuda_profiler_api.h>
// (host functions NVRTC refuses as the toolkit writes them) and a tiled kernel instantiated from
// host code with literal block sizes.
#include <assert.h>
#include <stdio.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <helper_cuda.h>

template <int BLOCK_SIZE>
__global__ void MatrixMulCUDA(float *C, float *A, float *B, int wA, int wB) {
  int bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
  int aBegin = wA * BLOCK_SIZE * by;
  int aEnd = aBegin + wA - 1;
  int bBegin = BLOCK_SIZE * bx;
  float Csub = 0;
  for (int a = aBegin, b = bBegin; a <= aEnd; a += BLOCK_SIZE, b += BLOCK_SIZE * wB) {
    __shared__ float As[BLOCK_SIZE][BLOCK_SIZE];
    __shared__ float Bs[BLOCK_SIZE][BLOCK_SIZE];
    As[ty][tx] = A[a + wA * ty + tx];
    Bs[ty][tx] = B[b + wB * ty + tx];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BLOCK_SIZE; ++k) Csub += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  C[wB * BLOCK_SIZE * by + BLOCK_SIZE * bx + wB * ty + tx] = Csub;
}

void ConstantInit(float *data, int size, float val) {
  for (int i = 0; i < size; ++i) data[i] = val;
}

int MatrixMultiply(int argc, char **argv, int block_size, const dim3 &dimsA, const dim3 &dimsB) {
  float *d_A, *d_B, *d_C;
  dim3 threads(block_size, block_size);
  dim3 grid(dimsB.x / threads.x, dimsA.y / threads.y);
  checkCudaErrors(cudaProfilerStart());
  if (block_size == 16) {
    MatrixMulCUDA<16><<<grid, threads>>>(d_C, d_A, d_B, dimsA.x, dimsB.x);
  } else {
    MatrixMulCUDA<32><<<grid, threads>>>(d_C, d_A, d_B, dimsA.x, dimsB.x);
  }
  checkCudaErrors(cudaProfilerStop());
  return EXIT_SUCCESS;
}

int main(int argc, char **argv) {
  dim3 dimsA(320, 320, 1), dimsB(640, 320, 1);
  return MatrixMultiply(argc, argv, 32, dimsA, dimsB);
}
