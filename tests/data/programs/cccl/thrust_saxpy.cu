// Written for kjit's tests in the shape of Thrust's examples: thrust::device_vector and an algorithm
// in host code, and a kernel of the file's own on the vector's raw pointer.
#include <thrust/device_vector.h>
#include <thrust/transform.h>
#include <iostream>

struct saxpy_functor {
  const float a;
  saxpy_functor(float a_) : a(a_) {}
  __host__ __device__ float operator()(const float& x, const float& y) const { return a * x + y; }
};

__global__ void saxpy_kernel(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

void saxpy_fast(float A, thrust::device_vector<float>& X, thrust::device_vector<float>& Y) {
  thrust::transform(X.begin(), X.end(), Y.begin(), Y.begin(), saxpy_functor(A));
}

int main() {
  thrust::device_vector<float> X(1024, 1.0f), Y(1024, 2.0f);
  saxpy_fast(2.0f, X, Y);
  saxpy_kernel<<<4, 256>>>(2.0f, thrust::raw_pointer_cast(X.data()), thrust::raw_pointer_cast(Y.data()), 1024);
  std::cout << Y[0] << std::endl;
  return 0;
}
