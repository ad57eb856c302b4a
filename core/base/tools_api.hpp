// KJIT_TOOLS_API: an internal function or class of libkjit that libkjit_tools calls, exported from
// libkjit.so for it alone (no promise to other programs: these are not include/kjit/'s API). The
// ctest build/libkjit_exports_only_what_clients_use fails on one that libkjit_tools does not use.
#pragma once

#define KJIT_TOOLS_API __attribute__((visibility("default")))
