// A project's kernel header: cuBLAS for its types and a check macro, host helpers declared.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cstdio>

#define cublasCheck(status) do { cublasStatus_t s_ = (status); if (s_ != CUBLAS_STATUS_SUCCESS) { printf("cuBLAS error %d\n", (int)s_); } } while (0)

void cublas_setup(cublasHandle_t* handle);
int ceil_div_host(int a, int b);

__device__ inline float scaled(float x, cublasOperation_t op) { return op == CUBLAS_OP_T ? -x : x; }
