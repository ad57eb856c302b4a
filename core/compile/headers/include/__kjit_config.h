// kjit's standard headers for NVRTC: what every one of them needs. NVRTC compiles device code
// only, so kjit's standard library is __host__ __device__ throughout (as libcu++'s is) and keeps
// to templates, enumerators and functions: NVRTC emits every namespace-scope constant and every
// static data member of an instantiated class as a module global (docs/headers.md).
#pragma once
#define __KJIT_HD __host__ __device__
#define __KJIT_HDI __host__ __device__ inline
