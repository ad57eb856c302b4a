// A test that cannot run its case here says why and returns: ctest counts a test whose output
// holds "[kjit-skip]" as skipped, never as passed (SKIP_REGULAR_EXPRESSION, tests/CMakeLists.txt).
//   if (::geteuid() != 0) KJIT_SKIP("not root: chown needs root");
#pragma once

#include <cstdio>
#include <sstream>

#define KJIT_SKIP(reason)                                                                           \
  do {                                                                                              \
    std::ostringstream kjit_skip_reason_;                                                           \
    kjit_skip_reason_ << reason;                                                                    \
    std::printf("[kjit-skip] %s\n", kjit_skip_reason_.str().c_str());                               \
    std::fflush(stdout);                                                                            \
    return;                                                                                         \
  } while (0)
