// A kernel beside cuBLAS calls: the header includes <cublas_v2.h>.
#include "blas_common.cuh"

__global__ void scale_rows(float* m, const float* s, int rows, int cols, cublasOperation_t op) {
  int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows && c < cols) m[r * cols + c] = scaled(m[r * cols + c] * s[r], op);
}
