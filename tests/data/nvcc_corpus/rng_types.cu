// A kernel file that includes cuRAND's host API header for its enums, and <cstdint>/<cinttypes>.
#include <curand.h>
#include <cstdint>
#include <cinttypes>

__global__ void fill_pattern(uint32_t* out, uint64_t n, curandRngType_t kind) {
  uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = (uint32_t)(i * 2654435761u) ^ (uint32_t)kind;
  if (i == 0 && kind == CURAND_RNG_PSEUDO_PHILOX4_32_10) printf("n=%" PRIu64 "\n", n);
}
