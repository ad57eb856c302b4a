// <stdlib.h> for device code: abs and its long forms, malloc and free (the device heap), in the
// global namespace and in std. The host's (exit, getenv, rand, qsort, ...) are left out.
#pragma once
#include "__kjit_config.h"
#ifndef EXIT_SUCCESS
#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
#endif
namespace std {
using ::abs; using ::labs; using ::llabs; using ::malloc; using ::free;
__KJIT_HDI long abs(long __x) { return ::labs(__x); }
__KJIT_HDI long long abs(long long __x) { return ::llabs(__x); }
}
