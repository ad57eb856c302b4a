#include <kjit/kjit.hpp>

#include <cstdio>
#include <filesystem>

int main() {
  kjit::RuntimeConfig config;
  config.cache_disabled = true;
  kjit::Runtime rt(config);
  auto r = rt.compile(kjit::Program("consumer.cu", "extern \"C\" __global__ void k(int* x) { *x = 1; }"),
                      {.arch = kjit::Arch::sm(90)});
  std::printf("consumer: compiled %s for %s\n", r.key.c_str(), r.arch.str().c_str());
  return r.has_cubin() ? 0 : 1;
}
