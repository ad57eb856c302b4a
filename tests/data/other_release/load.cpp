// A fixture of ctest build/libkjit_tools_of_another_release_fails_to_load: dlopen(argv[1]) as a
// host program loads libkjit_tools, RTLD_NOW; prints "loaded" or the loader's refusal, exit 0 or 1.
#include <cstdio>
#include <dlfcn.h>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  void* handle = ::dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    std::printf("not loaded: %s\n", ::dlerror());
    return 1;
  }
  std::printf("loaded %s\n", argv[1]);
  ::dlclose(handle);
  return 0;
}
