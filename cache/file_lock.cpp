#include "cache/file_lock.hpp"

#include "cache/config.hpp"
#include "cache/lock_heartbeat.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <utility>

namespace kjit::cache {

namespace {

using Clock = std::chrono::steady_clock;

// Never through a symbolic link (a lock file is never one); a new file gets `mode` (exactly, when
// asked: a team cache's lock files are 0660 whatever the umask).
int open_lock_file(const std::filesystem::path& path, FileMode mode) {
  // A holder removes its lock file when it lets go: between our O_EXCL create (EEXIST) and our
  // open (ENOENT) it may be gone; then create it again (a waiter that gave up here compiled a
  // key a second time, without the lock).
  for (int attempt = 0;; ++attempt) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode.mode);
    if (fd >= 0) {
      if (mode.exact) ::fchmod(fd, mode.mode);
      return fd;
    }
    if (errno != EEXIST) {
      if (errno != EACCES && errno != EROFS) return fd;
      break;
    }
    fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) return fd;
    if (errno == ENOENT && attempt < 100) continue;
    if (errno != EACCES && errno != EROFS) return fd;
    break;
  }
  // A read-only cache may still hold the lock file: flock works on a read-only descriptor.
  return ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
}

// True when `fd` is still the file at `path`: prune() may unlink an unheld lock file between
// our open() and our flock(), and a lock on an unlinked file excludes no one.
bool still_linked(int fd, const std::filesystem::path& path) {
  struct stat by_fd{}, by_path{};
  if (::fstat(fd, &by_fd) != 0 || ::stat(path.c_str(), &by_path) != 0) return false;
  return by_fd.st_dev == by_path.st_dev && by_fd.st_ino == by_path.st_ino;
}

}  // namespace

FileLock::FileLock(FileLock&& other) noexcept
    : m_fd(std::exchange(other.m_fd, -1)), m_remove_on_release(std::move(other.m_remove_on_release)) {
  other.m_remove_on_release.clear();
}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    release();
    m_fd = std::exchange(other.m_fd, -1);
    m_remove_on_release = std::move(other.m_remove_on_release);
    other.m_remove_on_release.clear();
  }
  return *this;
}

FileLock::~FileLock() { release(); }

void FileLock::release() {
  if (m_fd >= 0) {
    // Unlink while still holding: a waiter that opened this file notices it is gone.
    if (!m_remove_on_release.empty()) ::unlink(m_remove_on_release.c_str());
    // Closing the last descriptor of the open file description drops the flock.
    ::close(m_fd);
    m_fd = -1;
  }
  m_remove_on_release.clear();
}

Result<FileLock> FileLock::try_acquire(const std::filesystem::path& path, OnRelease on_release, FileMode mode) {
  return acquire(path, std::chrono::milliseconds(0), {}, std::chrono::milliseconds(0), on_release,
                 std::chrono::milliseconds(0), mode);
}

Result<FileLock> FileLock::acquire(const std::filesystem::path& path, std::chrono::milliseconds timeout,
                                   const std::function<void(std::chrono::milliseconds)>& progress,
                                   std::chrono::milliseconds progress_every, OnRelease on_release,
                                   std::chrono::milliseconds stale_after, FileMode mode) {
  timeout = saturate_duration(timeout);  // 1000000000000d: as long as kjit waits, never a negative
  stale_after = saturate_duration(stale_after);
  const auto start = Clock::now();
  LockWatch watch(path, stale_after);
  auto next_progress = start + std::max(progress_every, std::chrono::milliseconds(1));
  auto sleep_for = std::chrono::microseconds(500);
  int fd = -1;
  for (;;) {
    if (fd < 0) {
      fd = open_lock_file(path, mode);
      if (fd < 0) {
        return Failure{fmt::format("opening lock file {}: {}", path.string(), std::strerror(errno))};
      }
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      if (still_linked(fd, path)) {
        return FileLock(fd, on_release == OnRelease::remove_file ? path : std::filesystem::path());
      }
      ::close(fd);  // removed under us as stale: lock the new file instead
      fd = -1;
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) {
      Failure failure{fmt::format("locking {}: {}", path.string(), std::strerror(errno))};
      ::close(fd);
      return failure;
    }
    const auto now = Clock::now();
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - start);
    if (waited >= timeout) {
      ::close(fd);
      return Failure{fmt::format("waiting for lock {}: still held by another process after {} ms", path.string(),
                                 waited.count()),
                     Failure::Reason::timed_out};
    }
    if (stale_after.count() > 0 && watch.stalled()) {
      ::close(fd);
      return Failure{fmt::format("waiting for lock {}: its holder has shown no progress for {:.1f} s (alive but "
                                 "stopped: a signal, a debugger, a hung read?)",
                                 path.string(), watch.quiet_for().count() / 1000.0),
                     Failure::Reason::stalled};
    }
    if (progress && now >= next_progress) {
      progress(waited);
      next_progress = now + std::max(progress_every, std::chrono::milliseconds(1));
    }
    // Short, growing sleeps: a waiter notices a released lock within ~20 ms.
    const auto left = timeout - waited;
    std::this_thread::sleep_for(std::min<std::chrono::microseconds>(sleep_for, left));
    sleep_for = std::min(sleep_for * 2, std::chrono::microseconds(20000));
  }
}

}  // namespace kjit::cache
