// At load, libkjit maps its own code (MADV_POPULATE_READ, Linux 5.14+; elsewhere a no-op), so
// that a process's first request does not stop on a hundred page faults on the way through
// code it has never run. It costs a few tens of microseconds once, at process start, and is
// measured (prefault_microseconds) so that benchmarks can report it beside the request times.
// KJIT_NO_PREFAULT=1 turns it off.
#include <link.h>
#include <sys/mman.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

namespace kjit::runtime {
namespace {

double g_prefault_us = 0;

int prefault_own_segments(dl_phdr_info* info, size_t, void* self) {
  // Find the object that holds this function, then populate its executable segments.
  bool mine = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    auto start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && reinterpret_cast<ElfW(Addr)>(self) >= start &&
        reinterpret_cast<ElfW(Addr)>(self) < start + ph.p_memsz) {
      mine = true;
    }
  }
  if (!mine) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    auto start = (info->dlpi_addr + ph.p_vaddr) & ~ElfW(Addr){4095};
    auto end = info->dlpi_addr + ph.p_vaddr + ph.p_memsz;
    madvise(reinterpret_cast<void*>(start), end - start, MADV_POPULATE_READ);
  }
  return 1;
}

__attribute__((constructor)) void prefault_code() {
  if (const char* v = std::getenv("KJIT_NO_PREFAULT"); v && std::strcmp(v, "0") != 0) return;
  auto t0 = std::chrono::steady_clock::now();
  dl_iterate_phdr(prefault_own_segments, reinterpret_cast<void*>(&prefault_own_segments));
  g_prefault_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

double prefault_microseconds() { return g_prefault_us; }

}  // namespace kjit::runtime
