// A template kernel instantiated by name (block_max<float, 128>, block_max<int, 256>), built
// with --expt-relaxed-constexpr (numeric_limits<T>::lowest() is a constexpr host function to nvcc).
#include <type_traits>
#include <limits>
#include <cstdint>

template <typename T, int BLOCK>
__global__ void block_max(const T* in, T* out, int64_t n) {
  static_assert(std::is_arithmetic<T>::value, "arithmetic types only");
  __shared__ T tile[BLOCK];
  T m = std::numeric_limits<T>::lowest();
  for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < n; i += (int64_t)gridDim.x * BLOCK) m = max(m, in[i]);
  tile[threadIdx.x] = m;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) tile[threadIdx.x] = max(tile[threadIdx.x], tile[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = tile[0];
}

template __global__ void block_max<float, 128>(const float*, float*, int64_t);
template __global__ void block_max<int, 256>(const int*, int*, int64_t);
