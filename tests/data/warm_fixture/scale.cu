// Fixture kernel: a template instantiated through the manifest's name expressions.
#include "common.cuh"

#ifndef BLOCK
#error "BLOCK comes from the manifest's variants"
#endif

namespace fixture {
template <typename T>
__global__ void scale(T* x, T a, int n) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) x[i] = fixture::times(x[i], a);
}
}  // namespace fixture
