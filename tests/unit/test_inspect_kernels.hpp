// Kernel sources and a compile helper shared by the tests of kjit::inspect (real PTX from
// NVRTC through kjit::Runtime, cache disabled, for sm_90; no GPU needed).
#pragma once

#include <kjit/tools.hpp>

#include <string>
#include <vector>

namespace kjit::test {

inline const char* const k_gelu_source = R"(
extern "C" __global__ void gelu(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
}
extern "C" __global__ void softplus(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = logf(1.0f + expf(x[i]));
}
)";

// A loop whose trip count is known, so that #pragma unroll changes the code.
inline std::string unroll_source(bool unroll) {
  return std::string(R"(
extern "C" __global__ void dot8(const float* a, const float* b, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float s = 0.0f;
)") + (unroll ? "  #pragma unroll\n" : "  #pragma unroll 1\n") +
         R"(  for (int k = 0; k < 8; ++k) s += a[i * 8 + k] * b[k * n + i];
  out[i] = s;
}
)";
}

// Needs ~72 registers; with --maxrregcount=24 (the sm_90 floor) it must spill.
inline const char* const k_hungry_source = R"(
extern "C" __global__ void hungry(const float* x, float* y, int n) {
  float acc[64];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  #pragma unroll
  for (int k = 0; k < 64; ++k) acc[k] = x[i + k * n];
  float s = 0;
  #pragma unroll
  for (int k = 0; k < 64; ++k) s += acc[k] * acc[63 - k] + acc[(k * 7) % 64];
  y[i] = s;
}
)";

inline CompileResult compile_for_test(const std::string& name, const std::string& source,
                                      std::vector<std::string> flags = {}, int arch = 90) {
  Runtime rt(RuntimeConfig{.cache_disabled = true});
  return rt.compile(Program(name, source), CompileOptions{.arch = Arch::sm(arch), .flags = std::move(flags)});
}

}  // namespace kjit::test
