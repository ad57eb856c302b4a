// square: y[i] = x[i] * x[i]. The lecture's first kernel, at the bandwidth limit: 16-byte
// loads and stores (see elementwise.cuh for the launch).
#include "elementwise.cuh"

namespace kjit {

struct SquareOp {
  __device__ __forceinline__ float operator()(float v) const { return v * v; }
};

template <class T, int BLOCK = 256, int UNROLL = 1>
__global__ void __launch_bounds__(BLOCK) square(const T* __restrict__ x, T* __restrict__ y, unsigned long long n) {
  map<T, BLOCK, UNROLL>(x, y, n, SquareOp{});
}

}  // namespace kjit

// The lecture's naive version, kept for reference: one thread per element of a 2-D grid of
// 16x16 blocks.
extern "C" __global__ void square_matrix_naive(const float* matrix, float* result, int width, int height) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < height && col < width) {
    const int idx = row * width + col;
    result[idx] = matrix[idx] * matrix[idx];
  }
}
