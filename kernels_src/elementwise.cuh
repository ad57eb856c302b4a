// The elementwise map of the lecture kernels: y[i] = op(x[i]) for n elements. Each thread
// handles UNROLL 16-byte packs of one contiguous block-sized stripe (all loads first, then
// all stores, so UNROLL loads are in flight); the elements past the last whole pack, or all
// of them when a pointer is not 16-byte aligned, go one by one through a grid-stride loop.
// Launch with BLOCK threads and ceil(ceil(n / W) / (BLOCK * UNROLL)) blocks, W = 16 / sizeof(T).
#pragma once
#include "lecture_common.cuh"

namespace kjit {

template <class T, int BLOCK, int UNROLL, class Op>
__device__ __forceinline__ void map(const T* __restrict__ x, T* __restrict__ y, unsigned long long n, Op op) {
  constexpr int W = 16 / sizeof(T);
  const unsigned long long packs = aligned16(x, y) ? n / W : 0;
  const unsigned long long first = static_cast<unsigned long long>(blockIdx.x) * BLOCK * UNROLL + threadIdx.x;
  Pack<T, W> r[UNROLL];
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const unsigned long long i = first + static_cast<unsigned long long>(u) * BLOCK;
    if (i < packs) r[u] = load_pack<T, W>(x + i * W);
  }
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const unsigned long long i = first + static_cast<unsigned long long>(u) * BLOCK;
    if (i < packs) {
#pragma unroll
      for (int w = 0; w < W; ++w) r[u].v[w] = from_float<T>(op(to_float(r[u].v[w])));
      store_pack<T, W>(y + i * W, r[u]);
    }
  }
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * BLOCK;
  for (unsigned long long i = packs * W + static_cast<unsigned long long>(blockIdx.x) * BLOCK + threadIdx.x; i < n;
       i += stride) {
    y[i] = from_float<T>(op(to_float(x[i])));
  }
}

}  // namespace kjit
