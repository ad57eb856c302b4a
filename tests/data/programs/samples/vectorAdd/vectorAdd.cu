// Written for kjit's tests in the shape of a samples project's vectorAdd: the kernel, and main()
// around it with the project's Common/ helpers.
#include <stdio.h>
#include <cuda_runtime.h>
#include <helper_cuda.h>

__global__ void vectorAdd(const float *A, const float *B, float *C, int numElements) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < numElements) {
    C[i] = A[i] + B[i] + 0.0f;
  }
}

int main(int argc, const char **argv) {
  findCudaDevice(argc, argv);
  int numElements = 50000;
  size_t size = numElements * sizeof(float);
  float *h_A = (float *)malloc(size);
  float *d_A = NULL;
  checkCudaErrors(cudaMalloc((void **)&d_A, size));
  int threadsPerBlock = 256;
  int blocksPerGrid = (numElements + threadsPerBlock - 1) / threadsPerBlock;
  vectorAdd<<<blocksPerGrid, threadsPerBlock>>>(d_A, d_A, d_A, numElements);
  checkCudaErrors(cudaGetLastError());
  StopWatch timer;
  timer.start();
  printf("peak %ld KB, %f\n", peakMemoryKb(), timer.total());
  free(h_A);
  return 0;
}
