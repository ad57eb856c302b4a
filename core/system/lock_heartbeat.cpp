#include "core/system/lock_heartbeat.hpp"

#include <fcntl.h>
#include <sys/stat.h>

namespace kjit::system {

bool LockWatch::stalled() {
  const auto now = std::chrono::steady_clock::now();
  struct stat st{};
  if (::fstatat(m_dir_fd, m_name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {  // no lock file: nobody to wait for, nothing stale
    m_seen = false;
    return false;
  }
  const std::int64_t mtime = st.st_mtim.tv_sec * 1'000'000'000ll + st.st_mtim.tv_nsec;
  const auto inode = static_cast<std::uint64_t>(st.st_ino);
  if (!m_seen || inode != m_inode || mtime != m_mtime_ns) {
    m_seen = true;
    m_inode = inode;
    m_mtime_ns = mtime;
    m_since = now;
    return false;
  }
  return now - m_since >= m_stale_after;
}

std::chrono::milliseconds LockWatch::quiet_for() const {
  if (!m_seen) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - m_since);
}

}  // namespace kjit::system
