#include "runtime/compile/standard_headers.hpp"

#include "runtime/base/source_file.hpp"
#include "runtime/compile/driver_header.hpp"
#include "runtime/compile/nvrtc_compiler.hpp"

#include <string>

namespace kjit::compile {
namespace {

// The toolkit's cuda.h (the one NVRTC would find) without its host functions; empty when the
// toolkit has none.
const std::string& toolkit_driver_header() {
  static const std::string header = [] {
    for (const auto& dir : NvrtcCompiler::toolkit_include_dirs()) {
      cache::FileContent f = base::read_source_file(dir / "cuda.h");
      if (f.ok()) return driver_header_types(f.bytes);
    }
    return std::string();
  }();
  return header;
}

}  // namespace

const std::vector<std::pair<std::string_view, std::string_view>>& standard_headers() {
  static const std::vector<std::pair<std::string_view, std::string_view>> headers = [] {
  std::vector<std::pair<std::string_view, std::string_view>> list = {
      {"__kjit_std.h", R"kjit(#pragma once
namespace cuda { namespace std {} }
namespace std { using namespace ::cuda::std; }
)kjit"},
      {"cstdio", R"kjit(#pragma once
#include "__kjit_std.h"
)kjit"},
      {"cstdint", R"kjit(#pragma once
#include <cuda/std/cstdint>
#include "__kjit_std.h"
using ::cuda::std::int8_t; using ::cuda::std::int16_t; using ::cuda::std::int32_t; using ::cuda::std::int64_t;
using ::cuda::std::uint8_t; using ::cuda::std::uint16_t; using ::cuda::std::uint32_t; using ::cuda::std::uint64_t;
using ::cuda::std::intptr_t; using ::cuda::std::uintptr_t; using ::cuda::std::intmax_t; using ::cuda::std::uintmax_t;
)kjit"},
      {"cstddef", R"kjit(#pragma once
#include <cuda/std/cstddef>
#include "__kjit_std.h"
)kjit"},
      {"cstdlib", R"kjit(#pragma once
#include <cuda/std/cstdlib>
#include "__kjit_std.h"
// malloc, free, abs: device code has them. The host's (exit, getenv, rand, ...) are left out.
#ifndef EXIT_SUCCESS
#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
#endif
)kjit"},
      {"cstring", R"kjit(#pragma once
#include <cuda/std/cstring>
#include "__kjit_std.h"
)kjit"},
      {"climits", R"kjit(#pragma once
#include <cuda/std/climits>
#include "__kjit_std.h"
)kjit"},
      {"cfloat", R"kjit(#pragma once
#include <cuda/std/cfloat>
#include "__kjit_std.h"
#ifndef FLT_MAX
#define FLT_RADIX 2
#define FLT_MANT_DIG 24
#define DBL_MANT_DIG 53
#define FLT_DIG 6
#define DBL_DIG 15
#define FLT_DECIMAL_DIG 9
#define DBL_DECIMAL_DIG 17
#define DECIMAL_DIG 17
#define FLT_MIN_EXP (-125)
#define DBL_MIN_EXP (-1021)
#define FLT_MIN_10_EXP (-37)
#define DBL_MIN_10_EXP (-307)
#define FLT_MAX_EXP 128
#define DBL_MAX_EXP 1024
#define FLT_MAX_10_EXP 38
#define DBL_MAX_10_EXP 308
#define FLT_MAX 3.40282346638528859811704183484516925e+38F
#define DBL_MAX 1.79769313486231570814527423731704357e+308
#define FLT_MIN 1.17549435082228750796873653722224568e-38F
#define DBL_MIN 2.22507385850720138309023271733240406e-308
#define FLT_EPSILON 1.19209289550781250000000000000000000e-7F
#define DBL_EPSILON 2.22044604925031308084726333618164062e-16
#define FLT_TRUE_MIN 1.40129846432481707092372958328991613e-45F
#define DBL_TRUE_MIN 4.94065645841246544176568792868221372e-324
#define FLT_EVAL_METHOD 0
#endif
)kjit"},
      {"cmath", R"kjit(#pragma once
#include <cuda/std/cmath>
#include "__kjit_std.h"
// What the host's <math.h> gives a kernel written for nvcc (glibc, _GNU_SOURCE as g++ sets it):
// the M_ constants (double, and float with an f), HUGE_VAL*, INFINITY and NAN.
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
#define HUGE_VALF (::cuda::std::numeric_limits<float>::infinity())
#endif
#ifndef HUGE_VAL
#define HUGE_VAL (::cuda::std::numeric_limits<double>::infinity())
#endif
#ifndef HUGE_VALL
#define HUGE_VALL HUGE_VAL
#endif
#ifndef INFINITY
#define INFINITY (::cuda::std::numeric_limits<float>::infinity())
#endif
#ifndef NAN
#define NAN (::cuda::std::numeric_limits<float>::quiet_NaN())
#endif
)kjit"},
      {"cassert", R"kjit(#pragma once
#include <cuda/std/cassert>
#include "__kjit_std.h"
)kjit"},
      {"type_traits", R"kjit(#pragma once
#include <cuda/std/type_traits>
#include "__kjit_std.h"
)kjit"},
      {"utility", R"kjit(#pragma once
#include <cuda/std/utility>
#include "__kjit_std.h"
)kjit"},
      {"limits", R"kjit(#pragma once
#include <cuda/std/limits>
#include "__kjit_std.h"
// A template of namespace std of its own (cuda::std's behind it), as under nvcc: a kernel may
// specialize it for its own types (namespace std { template <> class numeric_limits<T> {...}; }).
// cv-qualified types take the unqualified type's, a user's specialization included.
namespace std {
template <class _Tp> class numeric_limits : public ::cuda::std::numeric_limits<_Tp> {};
template <class _Tp> class numeric_limits<const _Tp> : public numeric_limits<_Tp> {};
template <class _Tp> class numeric_limits<volatile _Tp> : public numeric_limits<_Tp> {};
template <class _Tp> class numeric_limits<const volatile _Tp> : public numeric_limits<_Tp> {};
}
)kjit"},
      {"tuple", R"kjit(#pragma once
#include <cuda/std/tuple>
#include "__kjit_std.h"
)kjit"},
      {"array", R"kjit(#pragma once
#include <cuda/std/array>
#include "__kjit_std.h"
)kjit"},
      {"functional", R"kjit(#pragma once
#include <cuda/std/functional>
#include "__kjit_std.h"
)kjit"},
      {"algorithm", R"kjit(#pragma once
#if __has_include(<cuda/std/algorithm>)
#include <cuda/std/algorithm>
#else
#include <cuda/std/__algorithm_>
#endif
#include "__kjit_std.h"
)kjit"},
      {"numeric", R"kjit(#pragma once
#include <cuda/std/numeric>
#include "__kjit_std.h"
)kjit"},
      {"complex", R"kjit(#pragma once
#include <cuda/std/complex>
#include "__kjit_std.h"
)kjit"},
      {"ctime", R"kjit(#pragma once
#include "__kjit_std.h"
// clock() and clock64() are NVRTC's own (clock_t too); the host's time functions are left out.
typedef long time_t;
#ifndef CLOCKS_PER_SEC
#define CLOCKS_PER_SEC 1000000l
#endif
namespace std { using ::clock_t; using ::time_t; }
)kjit"},
      {"stdio.h", R"kjit(#pragma once
#include <cstdio>
)kjit"},
      {"stdint.h", R"kjit(#pragma once
#include <cstdint>
)kjit"},
      {"stddef.h", R"kjit(#pragma once
#include <cstddef>
)kjit"},
      {"stdlib.h", R"kjit(#pragma once
#include <cstdlib>
)kjit"},
      {"string.h", R"kjit(#pragma once
#include <cstring>
)kjit"},
      {"limits.h", R"kjit(#pragma once
#include <climits>
)kjit"},
      {"float.h", R"kjit(#pragma once
#include <cfloat>
)kjit"},
      {"math.h", R"kjit(#pragma once
#include <cmath>
)kjit"},
      {"assert.h", R"kjit(#pragma once
#include <cassert>
)kjit"},
      {"time.h", R"kjit(#pragma once
#include <ctime>
)kjit"},
  };
  if (!toolkit_driver_header().empty()) list.emplace_back("cuda.h", toolkit_driver_header());
  return list;
  }();
  return headers;
}

}  // namespace kjit::compile
