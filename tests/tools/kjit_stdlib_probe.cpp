// kjit_stdlib_probe: a kernel written for nvcc (<cstdio>, <cassert>, <cstdint>) in a process of
// its own, for tests/gpu/test_gpu_standard_headers.cpp: device printf reaches this process's
// stdout, and a failed device assert poisons the context, so neither can run inside the test
// process. Uses include/kjit only.
//
//   kjit_stdlib_probe CACHE_DIR printf A B   prints "kjit-printf <thread> <A + thread * B>" from 4
//                                             threads, then "done"; exit 0
//   kjit_stdlib_probe CACHE_DIR assert       launches a kernel whose assert fails, synchronizes and
//                                             prints "error: <what kjit threw>"; exit 3
#include <kjit/tools.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

const char* k_source = R"(
#include <cstdio>
#include <cassert>
#include <cstdint>
extern "C" __global__ void say(std::int32_t a, std::int32_t b) {
  printf("kjit-printf %d %d\n", (int)threadIdx.x, a + (int)threadIdx.x * b);
}
extern "C" __global__ void check(int n) {
  assert(n < 0 && "n must be negative");
}
)";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: kjit_stdlib_probe CACHE_DIR printf A B | assert\n");
    return 2;
  }
  try {
    kjit::RuntimeConfig config;
    config.cache_dir = argv[1];
    kjit::Runtime rt(config);
    auto m = rt.load(kjit::Program("stdlib_probe.cu", k_source));
    const std::string mode = argv[2];
    if (mode == "printf" && argc == 5) {
      m.kernel<void(int, int)>("say").launch({.grid = 1, .block = 4}, std::atoi(argv[3]), std::atoi(argv[4]));
      kjit::Device::current().synchronize();
      std::fflush(stdout);
      std::printf("done\n");
      return 0;
    }
    if (mode == "assert") {
      m.kernel<void(int)>("check").launch({.grid = 1, .block = 1}, 5);
      kjit::Device::current().synchronize();
      std::printf("no error\n");
      return 0;
    }
    std::fprintf(stderr, "kjit_stdlib_probe: unknown mode %s\n", mode.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
    return 3;
  }
}
