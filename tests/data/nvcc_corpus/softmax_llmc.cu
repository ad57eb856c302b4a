// llm.c's shape: FLT_MAX, INFINITY, expf, uint and cooperative groups, no math include.
#include <cfloat>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

__global__ void softmax_forward_kernel(float* out, const float* inp, int N, int C) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  uint idx = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
  if (idx >= (uint)N) return;
  const float* x = inp + idx * C;
  float maxval = -FLT_MAX;
  for (int i = warp.thread_rank(); i < C; i += warp.size()) maxval = fmaxf(maxval, x[i]);
  maxval = cg::reduce(warp, maxval, cg::greater<float>{});
  float sumval = 0.0f;
  for (int i = warp.thread_rank(); i < C; i += warp.size()) sumval += expf(x[i] - maxval);
  sumval = cg::reduce(warp, sumval, cg::plus<float>{});
  for (int i = warp.thread_rank(); i < C; i += warp.size()) out[idx * C + i] = isinf(maxval) ? 0.0f : expf(x[i] - maxval) / sumval;
}
