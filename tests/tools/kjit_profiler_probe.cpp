// kjit_profiler_probe: a fresh process that opens a kjit::Profiler with the default options (no
// log callback of its own) and prints whether it records ("active" or "inactive") on stdout; what
// the library reports goes wherever its default log sends it. For the test of #40 item 11 in
// tests/unit/test_profile.cpp. Uses include/kjit only. Exit 0.
#include <kjit/tools.hpp>

#include <cstdio>

int main() {
  kjit::Profiler profiler;
  std::printf("%s\n", profiler.active() ? "active" : "inactive");
  return 0;
}
