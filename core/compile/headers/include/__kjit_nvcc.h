// What nvcc makes visible in every .cu file without an include (its cuda_runtime.h brings the
// host's <math.h>, <stdlib.h> and <sys/types.h>): the math functions and their std:: forms,
// the C math and float macros, uint/ushort/ulong. kjit pre-includes it into every compile unless
// CompileOptions::nvcc_environment is off (--no-nvcc-environment); it defines no variable and no
// function body a kernel does not call, so a kernel that uses none of it compiles to the same PTX.
#pragma once
// libcu++ (<cuda/std/...>, CUB) unrolls its type-list metafunctions 16 deep under NVRTC and 10
// under nvcc; at 16 NVRTC's preprocessor spends about a second on <cuda/std/type_traits> alone.
#ifndef _CCCL_META_UNROLL_LIMIT
#define _CCCL_META_UNROLL_LIMIT 10
#endif
#include "__kjit_cmath.h"
#include "__kjit_cstdlib.h"
#include "__kjit_cfloat.h"
// glibc's <sys/types.h>, which nvcc's cuda_runtime.h brings through <stdlib.h>, declares int8_t .. int64_t.
#include <stdint.h>
typedef unsigned char u_char;
typedef unsigned short u_short;
typedef unsigned int u_int;
typedef unsigned long u_long;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
