// A tutorial's vector add: the host part cut away, its includes and prototypes kept.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <string>
#include <random>
#include <memory>
#include <algorithm>
#include <fstream>
#include <sstream>
#include <iomanip>
#include <map>
#include <unordered_map>
#include <set>
#include <thread>
#include <mutex>
#include <functional>
#include <stdexcept>
#include <cstring>
#include <cassert>

#define CUDA_CHECK(call) do { cudaError_t e = (call); if (e != cudaSuccess) { std::printf("%s\n", cudaGetErrorString(e)); std::exit(1); } } while (0)

__global__ void vector_add(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
  assert(n > 0);
}

std::vector<float> random_vector(size_t n, unsigned seed);
void check(const std::vector<float>& got, const std::vector<float>& want, const std::string& what);
std::unique_ptr<float[]> to_host(const float* device, size_t n);
