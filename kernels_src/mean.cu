// mean: the mean of n elements as a float, the same result run after run.
//
// One launch of a fixed grid (the caller picks `blocks`; the result depends on it and on
// BLOCK, never on timing). Each thread sums its grid-stride share in float (16-byte loads,
// UNROLL in flight), the block reduces in a fixed order and writes its partial sum as a
// double; the last block to finish (an atomic ticket) adds the partials in index order,
// writes *out and resets the ticket for the next launch. Workspace: `partials` holds
// `blocks` doubles; `ticket` must be zero before the first launch.
#include "lecture_common.cuh"

namespace kjit {

template <class T, int BLOCK = 512, int UNROLL = 4>
__global__ void __launch_bounds__(BLOCK) mean(const T* __restrict__ x, unsigned long long n, double* partials,
                                              unsigned int* ticket, float* out) {
  constexpr int W = 16 / sizeof(T);
  const unsigned long long packs = aligned16(x, x) ? n / W : 0;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * BLOCK;
  unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * BLOCK + threadIdx.x;
  float acc = 0.0f;
  for (; i + (UNROLL - 1) * stride < packs; i += UNROLL * stride) {
    Pack<T, W> p[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) p[u] = load_pack<T, W>(x + (i + u * stride) * W);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
      for (int w = 0; w < W; ++w) acc += to_float(p[u].v[w]);
    }
  }
  for (; i < packs; i += stride) {
    const Pack<T, W> p = load_pack<T, W>(x + i * W);
#pragma unroll
    for (int w = 0; w < W; ++w) acc += to_float(p.v[w]);
  }
  for (unsigned long long e = packs * W + static_cast<unsigned long long>(blockIdx.x) * BLOCK + threadIdx.x; e < n;
       e += stride) {
    acc += to_float(x[e]);
  }
  const float block_sum = block_reduce<BLOCK>(acc, Sum{});

  __shared__ bool last;
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = block_sum;
    __threadfence();
    last = atomicAdd(ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  double total = 0.0;
  for (unsigned int b = threadIdx.x; b < gridDim.x; b += BLOCK) total += *static_cast<volatile double*>(partials + b);
  total = block_reduce<BLOCK>(total, Sum{});
  if (threadIdx.x == 0) {
    *out = static_cast<float>(total / static_cast<double>(n));
    *ticket = 0;
  }
}

}  // namespace kjit
