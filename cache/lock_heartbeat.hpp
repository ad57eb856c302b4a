// kjit::cache::LockHeartbeat and LockWatch: proof of progress for a held lock. The holder keeps a
// LockHeartbeat while it works: a thread that sets the lock file's mtime to now every `period`
// (futimens on the locked descriptor), until the object goes. A waiter keeps a LockWatch on the
// lock file's path: stalled() says whether the file (same inode) has shown no new mtime for
// `stale_after` of the waiter's own watching, so a holder that is alive but stopped (SIGSTOP, a
// debugger, a hung NFS read, heavy swap) is told apart from one that is slow but working, and a
// holder that has just taken the lock is never stale. Never throws.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <thread>

namespace kjit::cache {

class LockHeartbeat {
public:
  static constexpr std::chrono::milliseconds k_default_period{1000};

  LockHeartbeat(int fd, std::chrono::milliseconds period = k_default_period);
  ~LockHeartbeat();
  LockHeartbeat(const LockHeartbeat&) = delete;
  LockHeartbeat& operator=(const LockHeartbeat&) = delete;

private:
  int m_fd;
  std::chrono::milliseconds m_period;
  std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_stop = false;
  std::thread m_thread;
};

class LockWatch {
public:
  LockWatch(std::filesystem::path path, std::chrono::milliseconds stale_after)
      : m_path(std::move(path)), m_stale_after(stale_after) {}
  // Looks at the lock file now; true once it has shown no progress for stale_after.
  bool stalled();
  // How long the current lock file has shown no progress, as this watch saw it.
  std::chrono::milliseconds quiet_for() const;

private:
  std::filesystem::path m_path;
  std::chrono::milliseconds m_stale_after;
  bool m_seen = false;
  std::uint64_t m_inode = 0;
  std::int64_t m_mtime_ns = 0;
  std::chrono::steady_clock::time_point m_since;
};

}  // namespace kjit::cache
