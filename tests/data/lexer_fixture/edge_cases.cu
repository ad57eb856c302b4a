// Constructs the readers kjit had before its lexer misread (tests/unit/test_source_differential.cpp):
/* an include in a comment:
#include "not_a_header.h"
*/
#include <cstdint>
#define CAT(a, b) a ## b
__device__ char quote() { return '"'; }
__device__ const char* raw() { return R"(a "quoted" */ // )"; }
__global__ void after_quote(const float* input, float* output, int count) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) output[i] = input[i] + quote() + raw()[0];
}
__global__ void spl\
iced(int* values, int n) {
  if (threadIdx.x < n) values[threadIdx.x] = 1'000;
}
template <typename T> __global__ void after_char(T* data, char c = '{') { data[0] = c; }
