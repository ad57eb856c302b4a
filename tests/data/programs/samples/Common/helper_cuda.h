// Written for kjit's tests in the shape of a samples project's CUDA helpers: error checks as a host
// function template and a macro, device selection, a host class with a constructor.
#ifndef COMMON_HELPER_CUDA_H_
#define COMMON_HELPER_CUDA_H_

#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime.h>
#include "helper_string.h"

template <typename T>
void check(T result, char const *const func, const char *const file, int const line) {
  if (result) {
    fprintf(stderr, "CUDA error at %s:%d code=%d \"%s\"\n", file, line, static_cast<unsigned int>(result), func);
    exit(EXIT_FAILURE);
  }
}

#define checkCudaErrors(val) check((val), #val, __FILE__, __LINE__)

inline int findCudaDevice(int argc, const char **argv) {
  int devID = 0;
  if (checkCmdLineFlag(argc, argv, "device")) devID = 1;
  checkCudaErrors(cudaSetDevice(devID));
  return devID;
}

class StopWatch {
 public:
  StopWatch() : start_(0), total_(0.0f) {}
  ~StopWatch() {}
  void start() { start_ = 1; }
  float total() const { return total_; }

 private:
  int start_;
  float total_;
};

#endif  // COMMON_HELPER_CUDA_H_
