// Shared pieces of the lecture kernels: element types, 16-byte vectors, block reductions.
// Every kernel computes in float and reads/writes its element type T (float, __half,
// __nv_bfloat16).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace kjit {

// -infinity without <cmath> (NVRTC has no INFINITY macro).
__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }

template <class T> __device__ __forceinline__ float to_float(T v);
template <> __device__ __forceinline__ float to_float<float>(float v) { return v; }
template <> __device__ __forceinline__ float to_float<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// W elements of T loaded or stored as one access (16 bytes for W = 16 / sizeof(T)).
template <class T, int W>
struct alignas(sizeof(T) * W) Pack {
  T v[W];
};

template <class T, int W>
__device__ __forceinline__ Pack<T, W> load_pack(const T* p) {
  return *reinterpret_cast<const Pack<T, W>*>(p);
}

template <class T, int W>
__device__ __forceinline__ void store_pack(T* p, const Pack<T, W>& pack) {
  *reinterpret_cast<Pack<T, W>*>(p) = pack;
}

__device__ __forceinline__ bool aligned16(const void* a, const void* b) {
  return ((reinterpret_cast<unsigned long long>(a) | reinterpret_cast<unsigned long long>(b)) & 15ull) == 0;
}

struct Max {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct Sum {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
  __device__ __forceinline__ double operator()(double a, double b) const { return a + b; }
};

template <class V, class Op>
__device__ __forceinline__ V warp_reduce(V v, Op op) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Reduces one value per thread over the block; every thread gets the result. The order of
// the operations depends only on BLOCK, so the result is the same run after run.
template <int BLOCK, class V, class Op>
__device__ __forceinline__ V block_reduce(V v, Op op) {
  static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
  constexpr int warps = BLOCK / 32;
  __shared__ V partial[warps];
  v = warp_reduce(v, op);
  if constexpr (warps == 1) {
    return v;
  } else {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    V r = partial[0];
#pragma unroll
    for (int w = 1; w < warps; ++w) r = op(r, partial[w]);
    __syncthreads();  // partial may be reused by the next reduction
    return r;
  }
}

}  // namespace kjit
