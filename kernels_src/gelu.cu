// GELU, the tanh form: y = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), computed in
// float as x / (1 + exp(-2u)) (the same value: 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u))), which
// needs one fast exponential and a fast division and has no cancellation for large negative x. Same launch as
// square (elementwise.cuh).
#include "elementwise.cuh"

namespace kjit {

struct GeluTanhOp {
  __device__ __forceinline__ float operator()(float v) const {
    const float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
#if defined(KJIT_GELU_TANHF)
    return 0.5f * v * (1.0f + tanhf(u));
#else
    return __fdividef(v, 1.0f + __expf(-2.0f * u));  // exp(-2u) = inf gives v / inf = 0
#endif
  }
};

template <class T, int BLOCK = 256, int UNROLL = 1>
__global__ void __launch_bounds__(BLOCK) gelu(const T* __restrict__ x, T* __restrict__ y, unsigned long long n) {
  map<T, BLOCK, UNROLL>(x, y, n, GeluTanhOp{});
}

}  // namespace kjit
