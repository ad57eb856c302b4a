// Row-wise softmax, numerically safe: y = exp(x - max(x)) / sum(exp(x - max(x))) per row of
// `cols` elements, computed in float.
//
// softmax_fused: one block per row; the row is read once into registers (each thread holds
// ITEMS loads of W elements), so memory is read once and written once. It takes rows of at
// most BLOCK * ITEMS * W elements; W = 16 / sizeof(T) needs cols % W == 0 and 16-byte aligned
// pointers, W = 1 takes any row. Launch: grid = rows, block = BLOCK.
//
// softmax_online: any row length. One pass keeps a running max and a sum rescaled to it
// (online softmax), a second pass writes; the row is read twice. Launch: grid = rows,
// block = BLOCK.
#include "lecture_common.cuh"

namespace kjit {

template <class T, int W, int BLOCK, int ITEMS>
__global__ void __launch_bounds__(BLOCK) softmax_fused(const T* __restrict__ x, T* __restrict__ y, int cols) {
  const T* xr = x + static_cast<unsigned long long>(blockIdx.x) * cols;
  T* yr = y + static_cast<unsigned long long>(blockIdx.x) * cols;
  float v[ITEMS][W];
  float m = neg_inf();
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const int c = (k * BLOCK + static_cast<int>(threadIdx.x)) * W;
    if (c < cols) {
      const Pack<T, W> p = load_pack<T, W>(xr + c);
#pragma unroll
      for (int w = 0; w < W; ++w) {
        v[k][w] = to_float(p.v[w]);
        m = fmaxf(m, v[k][w]);
      }
    } else {
#pragma unroll
      for (int w = 0; w < W; ++w) v[k][w] = neg_inf();
    }
  }
  m = block_reduce<BLOCK>(m, Max{});
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
#pragma unroll
    for (int w = 0; w < W; ++w) {
      v[k][w] = __expf(v[k][w] - m);  // exp(-inf) = 0 for the padding
      s += v[k][w];
    }
  }
  s = block_reduce<BLOCK>(s, Sum{});
  const float inv = 1.0f / s;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const int c = (k * BLOCK + static_cast<int>(threadIdx.x)) * W;
    if (c < cols) {
      Pack<T, W> p;
#pragma unroll
      for (int w = 0; w < W; ++w) p.v[w] = from_float<T>(v[k][w] * inv);
      store_pack<T, W>(yr + c, p);
    }
  }
}

// (max, sum of exp(x - max)) merged from two partial results.
struct MaxSum {
  float m, s;
};

__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.m, b.m);
  if (m == neg_inf()) return {m, 0.0f};
  return {m, a.s * __expf(a.m - m) + b.s * __expf(b.m - m)};
}

template <class T, int BLOCK>
__global__ void __launch_bounds__(BLOCK) softmax_online(const T* __restrict__ x, T* __restrict__ y, int cols) {
  const T* xr = x + static_cast<unsigned long long>(blockIdx.x) * cols;
  T* yr = y + static_cast<unsigned long long>(blockIdx.x) * cols;
  MaxSum t{neg_inf(), 0.0f};
  for (int c = threadIdx.x; c < cols; c += BLOCK) t = merge(t, MaxSum{to_float(xr[c]), 1.0f});
  // Block-wide merge, in a fixed order.
  __shared__ MaxSum partial[BLOCK / 32];
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    MaxSum o{__shfl_xor_sync(0xffffffffu, t.m, offset), __shfl_xor_sync(0xffffffffu, t.s, offset)};
    t = merge(t, o);
  }
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = t;
  __syncthreads();
  MaxSum r = partial[0];
#pragma unroll
  for (int w = 1; w < BLOCK / 32; ++w) r = merge(r, partial[w]);
  const float inv = 1.0f / r.s;
  for (int c = threadIdx.x; c < cols; c += BLOCK) yr[c] = from_float<T>(__expf(to_float(xr[c]) - r.m) * inv);
}

}  // namespace kjit
