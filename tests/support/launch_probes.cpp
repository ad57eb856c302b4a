// LaunchProbe's counters: the replaced global operator new and delete, and pthread's lock
// functions defined here, so that the executable's code (libkjit's objects, linked statically,
// and the test's) calls these; they count on the calling thread while it is armed and forward to
// libc's (dlsym(RTLD_NEXT)). A lock is kjit's when its caller's address lies in this executable's
// code (the program's own executable segments, found with dl_iterate_phdr).
#include "support/launch_probes.hpp"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>

namespace {

thread_local bool t_armed = false;
thread_local kjit::test::Probed t_seen;

// The executable's code: [begin, end) of each executable segment (a handful).
struct CodeRange {
  std::uintptr_t begin = 0, end = 0;
};
CodeRange g_code[8];
std::atomic<int> g_code_count{-1};  // -1: not read yet

int note_program(dl_phdr_info* info, std::size_t, void*) {
  int n = 0;
  for (int i = 0; i < info->dlpi_phnum && n < 8; ++i) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    if (p.p_type == PT_LOAD && (p.p_flags & PF_X) != 0) {
      g_code[n].begin = info->dlpi_addr + p.p_vaddr;
      g_code[n].end = g_code[n].begin + p.p_memsz;
      ++n;
    }
  }
  g_code_count.store(n, std::memory_order_release);
  return 1;  // the first object is the program itself
}

bool in_this_executable(const void* address) {
  const int n = g_code_count.load(std::memory_order_acquire);
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  for (int i = 0; i < n; ++i) {
    if (a >= g_code[i].begin && a < g_code[i].end) return true;
  }
  return false;
}

void count_lock(const void* caller) {
  if (!t_armed) return;
  if (in_this_executable(caller)) {
    ++t_seen.locks;
  } else {
    ++t_seen.locks_elsewhere;
  }
}

void* allocate(std::size_t n) {
  if (t_armed) ++t_seen.allocations;
  return std::malloc(n == 0 ? 1 : n);
}
void* allocate_aligned(std::size_t n, std::align_val_t a) {
  if (t_armed) ++t_seen.allocations;
  const auto align = static_cast<std::size_t>(a);
  return std::aligned_alloc(align, (n + align - 1) / align * align);
}
void release(void* p) noexcept {
  if (p != nullptr && t_armed) ++t_seen.deallocations;
  std::free(p);
}

// libc's function `name`, found once (a plain atomic: a function-local static would take a guard,
// itself a lock, from inside the lock function).
template <class Fn>
Fn next(std::atomic<Fn>& cache, const char* name) {
  Fn f = cache.load(std::memory_order_acquire);
  if (f == nullptr) {
    f = reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, name));
    if (f == nullptr) std::abort();
    cache.store(f, std::memory_order_release);
  }
  return f;
}

}  // namespace

void* operator new(std::size_t n) {
  if (void* p = allocate(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = allocate(n)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return allocate(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return allocate(n); }
void* operator new(std::size_t n, std::align_val_t a) {
  if (void* p = allocate_aligned(n, a)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) {
  if (void* p = allocate_aligned(n, a)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return allocate_aligned(n, a); }
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate_aligned(n, a);
}
void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }

#define KJIT_PROBE_LOCK(name, type)                                                                 \
  extern "C" int name(type* lock) noexcept {                                                        \
    static std::atomic<int (*)(type*)> real{nullptr};                                               \
    count_lock(__builtin_return_address(0));                                                        \
    return next(real, #name)(lock);                                                                 \
  }
KJIT_PROBE_LOCK(pthread_mutex_lock, pthread_mutex_t)
KJIT_PROBE_LOCK(pthread_mutex_trylock, pthread_mutex_t)
KJIT_PROBE_LOCK(pthread_rwlock_rdlock, pthread_rwlock_t)
KJIT_PROBE_LOCK(pthread_rwlock_wrlock, pthread_rwlock_t)
KJIT_PROBE_LOCK(pthread_spin_lock, pthread_spinlock_t)
#undef KJIT_PROBE_LOCK

namespace kjit::test {

LaunchProbe::LaunchProbe() {
  if (g_code_count.load(std::memory_order_acquire) < 0) ::dl_iterate_phdr(note_program, nullptr);
  t_seen = {};
  t_armed = true;
}

LaunchProbe::~LaunchProbe() {
  if (m_armed) t_armed = false;
}

Probed LaunchProbe::stop() {
  t_armed = false;
  m_armed = false;
  return t_seen;
}

bool lock_probe_sees_this_executable() {
  std::mutex m;
  LaunchProbe probe;
  m.lock();
  m.unlock();
  return probe.stop().locks == 1;
}

}  // namespace kjit::test
