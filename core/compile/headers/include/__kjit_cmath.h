// <math.h> and <cmath> for device code, as nvcc's kernels see them: NVRTC's own math functions
// (sqrtf, expf, their float and double overloads, ...) also in std, the classification
// functions NVRTC lacks, and the macros of the host's <math.h> (glibc with _GNU_SOURCE, as g++
// compiles nvcc's host side): the M_ constants and their f forms, HUGE_VAL*, INFINITY, NAN, FP_*.
#pragma once
#include "__kjit_config.h"
#ifndef M_PI
#define M_E 2.7182818284590452354
#define M_LOG2E 1.4426950408889634074
#define M_LOG10E 0.43429448190325182765
#define M_LN2 0.69314718055994530942
#define M_LN10 2.30258509299404568402
#define M_PI 3.14159265358979323846
#define M_PI_2 1.57079632679489661923
#define M_PI_4 0.78539816339744830962
#define M_1_PI 0.31830988618379067154
#define M_2_PI 0.63661977236758134308
#define M_2_SQRTPI 1.12837916709551257390
#define M_SQRT2 1.41421356237309504880
#define M_SQRT1_2 0.70710678118654752440
#endif
#ifndef M_PIf
#define M_Ef 2.7182818284590452354f
#define M_LOG2Ef 1.4426950408889634074f
#define M_LOG10Ef 0.43429448190325182765f
#define M_LN2f 0.69314718055994530942f
#define M_LN10f 2.30258509299404568402f
#define M_PIf 3.14159265358979323846f
#define M_PI_2f 1.57079632679489661923f
#define M_PI_4f 0.78539816339744830962f
#define M_1_PIf 0.31830988618379067154f
#define M_2_PIf 0.63661977236758134308f
#define M_2_SQRTPIf 1.12837916709551257390f
#define M_SQRT2f 1.41421356237309504880f
#define M_SQRT1_2f 0.70710678118654752440f
#endif
#ifndef HUGE_VALF
#define HUGE_VALF (__builtin_bit_cast(float, 0x7f800000u))
#endif
#ifndef HUGE_VAL
#define HUGE_VAL (__builtin_bit_cast(double, 0x7ff0000000000000ull))
#endif
#ifndef HUGE_VALL
#define HUGE_VALL HUGE_VAL
#endif
// INFINITY and NAN are spelled as libcu++ spells them under NVRTC: its <cuda/std/cmath> (CUB,
// Thrust) defines both again, and one macro defined twice the same way is no warning. Until
// libcu++ makes _CUDA_VSTD the name of its namespace, _CUDA_VSTD names the small one here.
#if !defined(INFINITY) && !defined(NAN)
#ifndef _CUDA_VSTD
namespace _CUDA_VSTD {
template <class _Tp> struct numeric_limits;
template <> struct numeric_limits<float> {
  __KJIT_HD static constexpr float infinity() noexcept { return __builtin_bit_cast(float, 0x7f800000u); }
  __KJIT_HD static constexpr float quiet_NaN() noexcept { return __builtin_bit_cast(float, 0x7fc00000u); }
};
}  // namespace _CUDA_VSTD
#endif
#define INFINITY _CUDA_VSTD::numeric_limits<float>::infinity()
#define NAN      _CUDA_VSTD::numeric_limits<float>::quiet_NaN()
#endif
#ifndef FP_NAN
#define FP_NAN 0
#define FP_INFINITE 1
#define FP_ZERO 2
#define FP_SUBNORMAL 3
#define FP_NORMAL 4
#endif
#ifndef MATH_ERRNO
#define MATH_ERRNO 1
#define MATH_ERREXCEPT 2
#define math_errhandling (MATH_ERRNO | MATH_ERREXCEPT)
#endif
typedef float float_t;
typedef double double_t;

// What NVRTC has no function for, in the global namespace as the host's <math.h> has them.
__KJIT_HDI int fpclassify(float __x) {
  return ::isnan(__x) ? FP_NAN : ::isinf(__x) ? FP_INFINITE : __x == 0.0f ? FP_ZERO
       : ::fabsf(__x) < 1.17549435082228750796873653722224568e-38F ? FP_SUBNORMAL : FP_NORMAL;
}
__KJIT_HDI int fpclassify(double __x) {
  return ::isnan(__x) ? FP_NAN : ::isinf(__x) ? FP_INFINITE : __x == 0.0 ? FP_ZERO
       : ::fabs(__x) < 2.22507385850720138309023271733240406e-308 ? FP_SUBNORMAL : FP_NORMAL;
}
__KJIT_HDI bool isnormal(float __x) { return ::fpclassify(__x) == FP_NORMAL; }
__KJIT_HDI bool isnormal(double __x) { return ::fpclassify(__x) == FP_NORMAL; }
template <class _Tp> __KJIT_HDI bool isgreater(_Tp __x, _Tp __y) { return !::isnan(__x) && !::isnan(__y) && __x > __y; }
template <class _Tp> __KJIT_HDI bool isgreaterequal(_Tp __x, _Tp __y) { return !::isnan(__x) && !::isnan(__y) && __x >= __y; }
template <class _Tp> __KJIT_HDI bool isless(_Tp __x, _Tp __y) { return !::isnan(__x) && !::isnan(__y) && __x < __y; }
template <class _Tp> __KJIT_HDI bool islessequal(_Tp __x, _Tp __y) { return !::isnan(__x) && !::isnan(__y) && __x <= __y; }
template <class _Tp> __KJIT_HDI bool islessgreater(_Tp __x, _Tp __y) { return !::isnan(__x) && !::isnan(__y) && __x != __y; }
template <class _Tp> __KJIT_HDI bool isunordered(_Tp __x, _Tp __y) { return ::isnan(__x) || ::isnan(__y); }

namespace std {
using ::float_t; using ::double_t;
using ::fabs; using ::fmod; using ::remainder; using ::remquo; using ::fma; using ::fmax; using ::fmin;
using ::fdim; using ::exp; using ::exp2; using ::expm1; using ::log; using ::log10; using ::log2;
using ::log1p; using ::pow; using ::sqrt; using ::cbrt; using ::hypot; using ::sin; using ::cos;
using ::tan; using ::asin; using ::acos; using ::atan; using ::atan2; using ::sinh; using ::cosh;
using ::tanh; using ::asinh; using ::acosh; using ::atanh; using ::erf; using ::erfc; using ::tgamma;
using ::lgamma; using ::ceil; using ::floor; using ::trunc; using ::round; using ::lround;
using ::llround; using ::nearbyint; using ::rint; using ::lrint; using ::llrint; using ::frexp;
using ::ldexp; using ::modf; using ::scalbn; using ::scalbln; using ::ilogb; using ::logb;
using ::nextafter; using ::copysign; using ::nan; using ::isfinite; using ::isinf; using ::isnan;
using ::signbit; using ::fpclassify; using ::isnormal; using ::isgreater; using ::isgreaterequal;
using ::isless; using ::islessequal; using ::islessgreater; using ::isunordered;
using ::fabsf; using ::fmodf; using ::remainderf; using ::remquof; using ::fmaf; using ::fmaxf;
using ::fminf; using ::fdimf; using ::expf; using ::exp2f; using ::expm1f; using ::logf; using ::log10f;
using ::log2f; using ::log1pf; using ::powf; using ::sqrtf; using ::cbrtf; using ::hypotf; using ::sinf;
using ::cosf; using ::tanf; using ::asinf; using ::acosf; using ::atanf; using ::atan2f; using ::sinhf;
using ::coshf; using ::tanhf; using ::asinhf; using ::acoshf; using ::atanhf; using ::erff; using ::erfcf;
using ::tgammaf; using ::lgammaf; using ::ceilf; using ::floorf; using ::truncf; using ::roundf;
using ::lroundf; using ::llroundf; using ::nearbyintf; using ::rintf; using ::lrintf; using ::llrintf;
using ::frexpf; using ::ldexpf; using ::modff; using ::scalbnf; using ::scalblnf; using ::ilogbf;
using ::logbf; using ::nextafterf; using ::copysignf; using ::nanf;
using ::abs; using ::min; using ::max;
}
