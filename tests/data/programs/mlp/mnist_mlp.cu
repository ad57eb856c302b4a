// Written for kjit's tests in the shape of an MNIST MLP in CUDA: cuRAND's device API for the
// initialisation, cuBLAS handles in host code, the host's file reading, kernels for each layer.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <cuda_runtime.h>
#include <curand_kernel.h>
#include <cublas_v2.h>

#define INPUT_SIZE 784
#define HIDDEN_SIZE 256
#define OUTPUT_SIZE 10
#define CHECK_CUBLAS(call) do { cublasStatus_t s = (call); if (s != CUBLAS_STATUS_SUCCESS) exit(1); } while (0)

typedef struct {
  float *weights1, *weights2, *bias1, *bias2;
  cublasHandle_t handle;
} NeuralNetwork;

__global__ void init_weights(float* w, int n, float scale, unsigned long long seed) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    curandState state;
    curand_init(seed, i, 0, &state);
    w[i] = (curand_uniform(&state) * 2.0f - 1.0f) * scale;
  }
}

__global__ void relu_kernel(float* x, int size) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < size) x[i] = fmaxf(0.0f, x[i]);
}

__global__ void bias_add_kernel(float* x, const float* bias, int batch, int size) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < batch * size) x[i] += bias[i % size];
}

__global__ void softmax_kernel(float* x, int batch, int size) {
  int b = blockIdx.x;
  if (b >= batch) return;
  float maxv = x[b * size];
  for (int i = 1; i < size; ++i) maxv = fmaxf(maxv, x[b * size + i]);
  float sum = 0.0f;
  for (int i = 0; i < size; ++i) sum += expf(x[b * size + i] - maxv);
  for (int i = 0; i < size; ++i) x[b * size + i] = expf(x[b * size + i] - maxv) / sum;
}

void load_data(const char* filename, float* data, int size) {
  FILE* file = fopen(filename, "rb");
  if (file == NULL) exit(1);
  size_t read = fread(data, sizeof(float), size, file);
  (void)read;
  fclose(file);
}

void initialize_network(NeuralNetwork* nn) {
  CHECK_CUBLAS(cublasCreate(&nn->handle));
  init_weights<<<(HIDDEN_SIZE * INPUT_SIZE + 255) / 256, 256>>>(nn->weights1, HIDDEN_SIZE * INPUT_SIZE, 0.05f, time(NULL));
}

int main() {
  NeuralNetwork nn;
  initialize_network(&nn);
  float* x = (float*)malloc(INPUT_SIZE * sizeof(float));
  load_data("data/X_train.bin", x, INPUT_SIZE);
  free(x);
  return 0;
}
