// Written for kjit's tests in the shape of CUB's block examples: a block-wide reduction kernel,
// <utility> and libcu++'s <cuda/std/utility> together, host code with std::pair.
#include <cub/block/block_load.cuh>
#include <cub/block/block_reduce.cuh>
#include <utility>
#include <cuda/std/utility>
#include <cuda/std/tuple>
#include <ctime>
#include <cuda/std/ctime>
#include <iostream>

template <int BLOCK_THREADS, int ITEMS_PER_THREAD, cub::BlockReduceAlgorithm ALGORITHM>
__global__ void BlockReduceKernel(int* d_in, int* d_out, clock_t* d_elapsed) {
  using BlockLoadT = cub::BlockLoad<int, BLOCK_THREADS, ITEMS_PER_THREAD, cub::BLOCK_LOAD_TRANSPOSE>;
  using BlockReduceT = cub::BlockReduce<int, BLOCK_THREADS, ALGORITHM>;
  __shared__ typename BlockReduceT::TempStorage temp_storage;
  int data[ITEMS_PER_THREAD];
  BlockLoadT().Load(d_in, data);
  clock_t start = clock();
  int aggregate = BlockReduceT(temp_storage).Sum(data);
  clock_t stop = clock();
  cuda::std::pair<int, int> p{aggregate, 1};
  if (threadIdx.x == 0) {
    *d_elapsed = (start > stop) ? start - stop : stop - start;
    *d_out = p.first + cuda::std::get<1>(cuda::std::make_tuple(0, 0));
  }
}

template <int BLOCK_THREADS, int ITEMS_PER_THREAD, cub::BlockReduceAlgorithm ALGORITHM>
void Test() {
  std::pair<int, int> sizes{BLOCK_THREADS, ITEMS_PER_THREAD};
  int* d_in = nullptr;
  BlockReduceKernel<BLOCK_THREADS, ITEMS_PER_THREAD, ALGORITHM><<<1, BLOCK_THREADS>>>(d_in, d_in, nullptr);
  std::cout << sizes.first << std::endl;
}

int main() {
  Test<1024, 1, cub::BLOCK_REDUCE_RAKING>();
  BlockReduceKernel<128, 4, cub::BLOCK_REDUCE_WARP_REDUCTIONS><<<1, 128>>>(nullptr, nullptr, nullptr);
  return 0;
}
