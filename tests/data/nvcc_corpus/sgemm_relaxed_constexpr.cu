// An SGEMM write-up's kernel: a constexpr host helper called from device code
// (--expt-relaxed-constexpr), std::min from <algorithm>, ushort and ulong without an include.
#include <algorithm>

constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }
constexpr int TILE = 16;

__global__ void sgemm_tiled(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C) {
  __shared__ float As[TILE][TILE], Bs[TILE][TILE];
  const ushort tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int t = 0; t < ceil_div(K, TILE); ++t) {
    const int k0 = t * TILE;
    As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
    Bs[ty][tx] = (col < N && k0 + ty < K) ? B[(k0 + ty) * N + col] : 0.0f;
    __syncthreads();
    const int tile = TILE;
    for (int k = 0; k < std::min(tile, K - k0); ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) {
    const ulong at = (ulong)row * N + col;
    C[at] = alpha * acc + beta * C[at];
  }
}
