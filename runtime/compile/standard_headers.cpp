#include "runtime/compile/standard_headers.hpp"

namespace kjit::compile {

const std::vector<std::pair<std::string_view, std::string_view>>& standard_headers() {
  static const std::vector<std::pair<std::string_view, std::string_view>> headers = {
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
  };
  return headers;
}

}  // namespace kjit::compile
