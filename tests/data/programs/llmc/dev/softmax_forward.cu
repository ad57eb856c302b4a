/*
Written for kjit's tests in the shape of llm.c's softmax benchmarks: a kernel template instantiated by
host code for several block sizes, a cooperative-groups reduction, and <bits/stdc++.h>-style host code.
*/
#include <bits/stdc++.h>
#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include "common.h"

namespace cg = cooperative_groups;

template <int BLOCK>
__global__ void softmax_forward_kernel(float* out, const float* inp, int N, int C) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  int idx = blockIdx.x * BLOCK / 32 + warp.meta_group_rank();
  if (idx >= N) return;
  const float* x = inp + idx * C;
  float maxval = -INFINITY;
  for (int i = warp.thread_rank(); i < C; i += warp.size()) maxval = fmaxf(maxval, x[i]);
  maxval = cg::reduce(warp, maxval, cg::greater<float>{});
  float sumval = 0.0f;
  for (int i = warp.thread_rank(); i < C; i += warp.size()) sumval += expf(x[i] - maxval);
  sumval = cg::reduce(warp, sumval, cg::plus<float>{});
  for (int i = warp.thread_rank(); i < C; i += warp.size()) out[idx * C + i] = expf(x[i] - maxval) / sumval;
}

void softmax_forward(float* out, const float* inp, int N, int C, int block_size) {
  switch (block_size) {
    case 64: softmax_forward_kernel<64><<<ceil_div(N * 32, 64), 64>>>(out, inp, N, C); break;
    case 128: softmax_forward_kernel<128><<<ceil_div(N * 32, 128), 128>>>(out, inp, N, C); break;
    case 256: softmax_forward_kernel<256><<<ceil_div(N * 32, 256), 256>>>(out, inp, N, C); break;
    default: softmax_forward_kernel<512><<<ceil_div(N * 32, 512), 512>>>(out, inp, N, C); break;
  }
  cudaCheck(cudaGetLastError());
}

int main() {
  std::vector<int> sizes = {64, 128, 256, 512};
  for (int s : sizes) softmax_forward(nullptr, nullptr, 8 * 1024, 50257, s);
  std::cout << "ok" << std::endl;
  return 0;
}
