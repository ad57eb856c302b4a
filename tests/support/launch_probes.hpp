// The launch path's rules, observed: while a LaunchProbe is armed on a thread, it counts that
// thread's calls of the global operator new and delete (replaced in this executable) and the locks
// (pthread mutex, rwlock and spin locks, interposed in this executable and forwarded to libc with
// dlsym(RTLD_NEXT)) that code linked into this executable takes: libkjit's, linked statically as
// kjit_runtime_internal, and the test's own. Locks the driver takes inside libcuda are counted
// apart (locks_elsewhere): they are not kjit's. Other threads are never counted.
//
//   kjit::test::LaunchProbe probe;
//   for (int i = 0; i < 1000; ++i) kernel.launch(config, x, y, n);
//   const auto seen = probe.stop();
//   CHECK(seen.allocations == 0);
//   CHECK(seen.locks == 0);
#pragma once

#include <cstdint>

namespace kjit::test {

struct Probed {
  std::uint64_t allocations = 0;      // operator new (every form)
  std::uint64_t deallocations = 0;    // operator delete (every form)
  std::uint64_t locks = 0;            // taken by code of this executable (kjit's, the test's)
  std::uint64_t locks_elsewhere = 0;  // taken by shared libraries' code (libcuda, libstdc++.so)
};

class LaunchProbe {
public:
  LaunchProbe();  // armed on this thread (one probe at a time per thread)
  ~LaunchProbe();
  LaunchProbe(const LaunchProbe&) = delete;
  LaunchProbe& operator=(const LaunchProbe&) = delete;
  // Disarms and returns what was counted since construction.
  Probed stop();

private:
  bool m_armed = true;
};

// Whether this executable's own code reaches the interposed pthread_mutex_lock (false would mean
// the lock probe could not see kjit's locks): a std::mutex locked here, counted.
bool lock_probe_sees_this_executable();

}  // namespace kjit::test
