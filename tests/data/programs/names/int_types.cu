// Written for kjit's tests: kernels whose parameters are the fixed-width and size types nvcc names as
// the LP64 host does (int64_t is long: _Z...l, not x), with libcu++ and CUB in the same program.
#include <cstdint>
#include <cstddef>
#include <cinttypes>
#include <cstdio>
#include <cuda/std/cstdint>
#include <cub/warp/warp_reduce.cuh>

__global__ void take_int64(int64_t* out, uint64_t a, size_t b, ptrdiff_t c, intptr_t d, uintptr_t e) {
  out[0] = (int64_t)a + (int64_t)b + c + d + (int64_t)e;
}

__global__ void take_std(std::int64_t* out, std::uint64_t n, cuda::std::int64_t m, intmax_t k) {
  using WarpReduce = cub::WarpReduce<int64_t>;
  __shared__ typename WarpReduce::TempStorage temp;
  int64_t sum = WarpReduce(temp).Sum((int64_t)n + m + k);
  if (threadIdx.x == 0) {
    out[0] = sum;
    printf("%" PRId64 "\n", sum);
  }
}

template <class T>
__global__ void take_template(T* p) { p[0] = T(1); }

template __global__ void take_template<int64_t>(int64_t*);
template __global__ void take_template<uint64_t>(uint64_t*);
