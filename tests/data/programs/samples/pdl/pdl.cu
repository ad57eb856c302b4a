// Written for kjit's tests in the shape of the programming guide's programmatic dependent launch
// example: device calls nvcc's implicit cuda_runtime.h declares (cuda_device_runtime_api.h), and the
// host code that launches with the attribute.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void primary_kernel(float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 1.0f;
  cudaTriggerProgrammaticLaunchCompletion();
}

__global__ void secondary_kernel(float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  cudaGridDependencySynchronize();
  if (i < n) out[i] += 1.0f;
}

int main() {
  float *d = nullptr;
  int n = 1024;
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  primary_kernel<<<n / 256, 256, 0, stream>>>(d, n);
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = n / 256;
  config.blockDim = 256;
  config.stream = stream;
  config.attrs = attribute;
  config.numAttrs = 1;
  cudaLaunchKernelEx(&config, secondary_kernel, d, n);
  printf("done\n");
  return 0;
}
