// <sys/time.h>, host-only under NVRTC: struct timeval for prototypes; gettimeofday in device code
// fails naming the header (in a kernel, use clock64() or globaltimer).
#pragma once
#include "__kjit_host_only.h"
struct timeval { long tv_sec; long tv_usec; };
struct timezone;
template <class... _Args> __KJIT_HD int gettimeofday(_Args...) {
  static_assert(::std::__kjit::__host_only<_Args...>, "gettimeofday (<sys/time.h>) is host-only under NVRTC: in a kernel, use clock64()");
  return 0;
}
