// A fixture of ctest build/libkjit_tools_of_another_release_fails_to_load: a "libkjit_tools" that
// takes one internal from libkjit, as the real one takes parse_size (core/spi/system.hpp). Built
// against libkjit of another release it needs that release's KJIT_PRIVATE node; built against
// this release's libkjit, it loads.
#include "core/spi/system.hpp"

extern "C" __attribute__((visibility("default"))) int kjit_other_release_probe() {
  return kjit::system::parse_size("2G").has_value() ? 1 : 0;
}
