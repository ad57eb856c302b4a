// The device runtime API as nvcc's implicit cuda_runtime.h brings it to device code: programmatic
// dependent launch (cudaGridDependencySynchronize, cudaTriggerProgrammaticLaunchCompletion),
// conditional graph nodes (cudaGraphSetConditional), dynamic parallelism's launches. NVRTC declares
// none of it. NvrtcCompiler pre-includes this when NVRTC says one of its names is undefined (and the
// nvcc environment is on): the toolkit's own declarations, without its "internal header" warning.
#pragma once
#ifndef __CUDA_INCLUDE_COMPILER_INTERNAL_HEADERS__
#define __CUDA_INCLUDE_COMPILER_INTERNAL_HEADERS__
#define __KJIT_UNDEF_INTERNAL_HEADERS
#endif
#include <cuda_device_runtime_api.h>
#ifdef __KJIT_UNDEF_INTERNAL_HEADERS
#undef __CUDA_INCLUDE_COMPILER_INTERNAL_HEADERS__
#undef __KJIT_UNDEF_INTERNAL_HEADERS
#endif
