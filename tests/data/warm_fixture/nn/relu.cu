// Fixture kernel in a subfolder: its Program name is "nn/relu.cu"; activation.cuh comes from
// the manifest's include_dirs, common.cuh from the search path (the fixture's root).
#include "activation.cuh"
#include "common.cuh"

extern "C" __global__ void relu(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = fixture::times(fixture::activate(x[i]), 1.0f);
}
