// Written for kjit's tests in the shape of a samples project's conditional graph nodes: a kernel
// that sets a graph's condition (cudaGraphSetConditional, from cuda_device_runtime_api.h).
#include <cstdio>
#include <cuda_runtime.h>
#include <helper_cuda.h>

__global__ void setHandle(cudaGraphConditionalHandle handle, char *dPtr) {
  unsigned int value = *dPtr ? 1 : 0;
  cudaGraphSetConditional(handle, value);
}

__global__ void ifGraphKernel(char *dPtr) { printf("condition %d\n", (int)*dPtr); }

void simpleIfGraph(void) {
  cudaGraph_t graph;
  cudaGraphExec_t graphExec;
  checkCudaErrors(cudaGraphCreate(&graph, 0));
  cudaGraphConditionalHandle handle;
  checkCudaErrors(cudaGraphConditionalHandleCreate(&handle, graph, 0, 0));
  checkCudaErrors(cudaGraphInstantiate(&graphExec, graph, NULL, NULL, 0));
}

int main(int argc, char **argv) {
  findCudaDevice(argc, (const char **)argv);
  simpleIfGraph();
  return 0;
}
