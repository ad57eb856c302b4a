// A test that cannot run its case here says why and returns: ctest counts a test whose output
// holds "[kjit-skip]" as skipped, never as passed (SKIP_REGULAR_EXPRESSION, tests/CMakeLists.txt).
//   if (::geteuid() != 0) KJIT_SKIP("not root: chown needs root");
#pragma once

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#define KJIT_SKIP(reason)                                                                           \
  do {                                                                                              \
    std::ostringstream kjit_skip_reason_;                                                           \
    kjit_skip_reason_ << reason;                                                                    \
    std::printf("[kjit-skip] %s\n", kjit_skip_reason_.str().c_str());                               \
    std::fflush(stdout);                                                                            \
    return;                                                                                         \
  } while (0)

// A case whose server (s3rver, docker-registry) `why_fn()` says cannot run here skips, saying
// why; under CI (the test command on a fresh machine, where scripts/install-deps.sh installed the
// servers) it fails instead (doctest's FAIL: the test file includes doctest).
#define KJIT_REQUIRE_SERVER(why_fn)                                                                 \
  do {                                                                                              \
    const std::string kjit_server_why_ = (why_fn)();                                                \
    if (!kjit_server_why_.empty()) {                                                                \
      if (std::getenv("CI") != nullptr) FAIL("CI runs this suite: " << kjit_server_why_);            \
      KJIT_SKIP(kjit_server_why_);                                                                  \
    }                                                                                               \
  } while (0)
