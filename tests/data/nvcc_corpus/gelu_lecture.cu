// GPU MODE lecture 1's GELU, for load_inline: M_PI and tanhf without an include.
#include <iostream>
#include <chrono>

__global__ void gelu_kernel(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = 0.5f * v * (1.0f + tanhf(sqrtf(2.0f / M_PI) * (v + 0.044715f * v * v * v)));
  }
}

void launch_gelu(const float* x, float* y, int n);
