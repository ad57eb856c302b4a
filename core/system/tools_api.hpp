// KJIT_TOOLS_API: an internal function or class of libkjit that libkjit_tools calls, exported from
// libkjit.so for it alone (no promise to other programs: these are not include/kjit/'s API).
// The rule (ARCHITECTURE.md, "Exports"): libkjit exports an internal for libkjit_tools only when
// libkjit_tools calls it and a copy of it in libkjit_tools would be a second one of something a
// process must have once: the floors (core/system/, core/cache/: fork handlers, the worker list,
// hiredis, libsodium, libcurl), the core's process-wide state (trace/'s recorder), or a decision
// whose copy would drift (the options' canonical form, a kernel request, a tuning decision's
// text). The ctest build/libkjit_exports_only_what_clients_use fails on one libkjit_tools does not
// use; build/libkjit_tools_has_no_floor on a floor function libkjit_tools defines itself.
#pragma once

#define KJIT_TOOLS_API __attribute__((visibility("default")))
