// kjit::system::LockWatch: proof of progress for a held lock, seen by a waiter. The holder keeps a
// heartbeat while it works (Background::heartbeat, on the Runtime's one background thread: the lock
// file's mtime set to now every second, futimens on the locked descriptor), until the handle
// goes. A waiter keeps a LockWatch on the
// lock file's path: stalled() says whether the file (same inode) has shown no new mtime for
// `stale_after` of the waiter's own watching, so a holder that is alive but stopped (SIGSTOP, a
// debugger, a hung NFS read, heavy swap) is told apart from one that is slow but working, and a
// holder that has just taken the lock is never stale. Never throws.
#pragma once

#include <fcntl.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>

namespace kjit::system {

class LockWatch {
public:
  LockWatch(std::filesystem::path path, std::chrono::milliseconds stale_after)
      : m_name(path.string()), m_stale_after(stale_after) {}
  // The lock file `name` in the folder `dir_fd` (which must outlive the watch), never through a link.
  LockWatch(int dir_fd, std::string name, std::chrono::milliseconds stale_after)
      : m_dir_fd(dir_fd), m_name(std::move(name)), m_stale_after(stale_after) {}
  // Looks at the lock file now; true once it has shown no progress for stale_after.
  bool stalled();
  // How long the current lock file has shown no progress, as this watch saw it.
  std::chrono::milliseconds quiet_for() const;

private:
  int m_dir_fd = AT_FDCWD;  // AT_FDCWD: m_name is a path
  std::string m_name;
  std::chrono::milliseconds m_stale_after;
  bool m_seen = false;
  std::uint64_t m_inode = 0;
  std::int64_t m_mtime_ns = 0;
  std::chrono::steady_clock::time_point m_since;
};

}  // namespace kjit::system
