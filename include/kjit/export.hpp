// KJIT_API marks what libkjit exports: the public API and nothing else. libkjit is built with
// hidden visibility (-fvisibility=hidden), so whatever a header in include/kjit does not mark is
// internal to the library.
#pragma once

#include <kjit/export.hpp>

#if defined(_WIN32)
#define KJIT_API
#else
#define KJIT_API __attribute__((visibility("default")))
#endif
