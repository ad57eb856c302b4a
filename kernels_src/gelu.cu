// GELU, the tanh form: y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), computed in float.
// Same launch as square (elementwise.cuh).
#include "elementwise.cuh"

namespace kjit {

struct GeluTanhOp {
  __device__ __forceinline__ float operator()(float v) const {
    const float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
    return 0.5f * v * (1.0f + tanhf(inner));
  }
};

template <class T, int BLOCK = 256, int UNROLL = 4>
__global__ void __launch_bounds__(BLOCK) gelu(const T* __restrict__ x, T* __restrict__ y, unsigned long long n) {
  map<T, BLOCK, UNROLL>(x, y, n, GeluTanhOp{});
}

}  // namespace kjit
