// The elementwise map of the lecture kernels: y[i] = op(x[i]) for n elements. A block takes
// chunks of BLOCK * UNROLL 16-byte packs (a grid-stride loop over chunks); each thread loads its
// UNROLL packs of a chunk first and then stores them, so UNROLL loads are in flight. The
// elements past the last whole pack, or all of them when a pointer is not 16-byte aligned, go
// one by one through a grid-stride loop. Launch with BLOCK threads and up to
// ceil(ceil(n / W) / (BLOCK * UNROLL)) blocks, W = 16 / sizeof(T).
#pragma once
#include "lecture_common.cuh"

namespace kjit {

template <class T, int BLOCK, int UNROLL, class Op>
__device__ __forceinline__ void map(const T* __restrict__ x, T* __restrict__ y, unsigned long long n, Op op) {
  constexpr int W = 16 / sizeof(T);
  constexpr unsigned long long chunk = static_cast<unsigned long long>(BLOCK) * UNROLL;  // packs per block
  const unsigned long long packs = aligned16(x, y) ? n / W : 0;
  for (unsigned long long start = blockIdx.x * chunk; start < packs; start += gridDim.x * chunk) {
    const T* xs = x + (start + threadIdx.x) * W;
    T* ys = y + (start + threadIdx.x) * W;
    Pack<T, W> r[UNROLL];
    if (start + chunk <= packs) {  // a whole chunk: no bounds checks
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) r[u] = load_pack<T, W>(xs + u * BLOCK * W);
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
        for (int w = 0; w < W; ++w) r[u].v[w] = from_float<T>(op(to_float(r[u].v[w])));
        store_pack<T, W>(ys + u * BLOCK * W, r[u]);
      }
    } else {
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        if (start + threadIdx.x + u * BLOCK < packs) r[u] = load_pack<T, W>(xs + u * BLOCK * W);
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        if (start + threadIdx.x + u * BLOCK < packs) {
#pragma unroll
          for (int w = 0; w < W; ++w) r[u].v[w] = from_float<T>(op(to_float(r[u].v[w])));
          store_pack<T, W>(ys + u * BLOCK * W, r[u]);
        }
      }
    }
  }
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * BLOCK;
  for (unsigned long long i = packs * W + static_cast<unsigned long long>(blockIdx.x) * BLOCK + threadIdx.x; i < n;
       i += stride) {
    y[i] = from_float<T>(op(to_float(x[i])));
  }
}

}  // namespace kjit
