#include "core/system/file_lock.hpp"

#include "core/system/units.hpp"
#include "core/system/lock_heartbeat.hpp"
#include "core/system/unique_fd.hpp"

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

namespace kjit::system {

namespace {

using Clock = std::chrono::steady_clock;

// The lock file `name` in the folder `dir_fd`, never through a symbolic link (a lock file is never
// one) and never blocking on a FIFO planted there: opened O_NONBLOCK, then it must be a regular
// file (`why` says what else it is). A new file gets `mode` (exactly, when asked: a team cache's
// lock files are 0660 whatever the umask).
int open_lock_file(int dir_fd, const char* name, FileMode mode, std::string& why) {
  constexpr int k_flags = O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  auto regular = [&](int fd) {
    struct stat st{};
    if (fd < 0) return fd;
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      errno = err;
      return -1;
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      why = "not a regular file (a FIFO, device, socket or folder planted there); not used";
      errno = EINVAL;
      return -1;
    }
    return fd;
  };
  // A holder removes its lock file when it lets go: between our O_EXCL create (EEXIST) and our
  // open (ENOENT) it may be gone; then create it again (a waiter that gave up here compiled a
  // key a second time, without the lock).
  for (int attempt = 0;; ++attempt) {
    int fd = ::openat(dir_fd, name, O_RDWR | O_CREAT | O_EXCL | k_flags, mode.mode);
    if (fd >= 0) {
      if (mode.exact) ::fchmod(fd, mode.mode);
      return regular(fd);
    }
    if (errno != EEXIST) {
      if (errno != EACCES && errno != EROFS) return fd;
      break;
    }
    fd = ::openat(dir_fd, name, O_RDWR | k_flags);
    if (fd >= 0) return regular(fd);
    if (errno == ENOENT && attempt < 100) continue;
    if (errno != EACCES && errno != EROFS) return fd;
    break;
  }
  // A read-only cache may still hold the lock file: flock works on a read-only descriptor.
  return regular(::openat(dir_fd, name, O_RDONLY | k_flags));
}

// True when `fd` is still the file `name` in `dir_fd`: prune() may unlink an unheld lock file
// between our open() and our flock(), and a lock on an unlinked file excludes no one.
bool still_linked(int fd, int dir_fd, const char* name) {
  struct stat by_fd{}, by_name{};
  if (::fstat(fd, &by_fd) != 0 || ::fstatat(dir_fd, name, &by_name, AT_SYMLINK_NOFOLLOW) != 0) return false;
  return by_fd.st_dev == by_name.st_dev && by_fd.st_ino == by_name.st_ino;
}

}  // namespace

FileLock::FileLock(FileLock&& other) noexcept
    : m_fd(std::exchange(other.m_fd, -1)),
      m_dir_fd(std::exchange(other.m_dir_fd, -1)),
      m_remove_on_release(std::move(other.m_remove_on_release)) {
  other.m_remove_on_release.clear();
}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    release();
    m_fd = std::exchange(other.m_fd, -1);
    m_dir_fd = std::exchange(other.m_dir_fd, -1);
    m_remove_on_release = std::move(other.m_remove_on_release);
    other.m_remove_on_release.clear();
  }
  return *this;
}

FileLock::~FileLock() { release(); }

void FileLock::release() {
  if (m_fd >= 0) {
    // Unlink while still holding: a waiter that opened this file notices it is gone.
    if (!m_remove_on_release.empty()) ::unlinkat(m_dir_fd, m_remove_on_release.c_str(), 0);
    // Unlocked explicitly: closing drops the flock only with the last descriptor of the open
    // file description, and a child forked meanwhile holds one.
    ::flock(m_fd, LOCK_UN);
    ::close(m_fd);
    m_fd = -1;
  }
  if (m_dir_fd >= 0) ::close(m_dir_fd);
  m_dir_fd = -1;
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
  // The folder opened once, then everything relative to it.
  const std::filesystem::path parent = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  const UniqueFd dir(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) {
    return Failure{fmt::format("opening lock file {}: {}", path.string(), std::strerror(errno))};
  }
  return acquire_at(dir.get(), parent.string(), path.filename().string(), timeout, progress, progress_every,
                    on_release, stale_after, mode);
}

Result<FileLock> FileLock::acquire_at(int dir_fd, const std::string& dir, const std::string& name,
                                      std::chrono::milliseconds timeout,
                                      const std::function<void(std::chrono::milliseconds)>& progress,
                                      std::chrono::milliseconds progress_every, OnRelease on_release,
                                      std::chrono::milliseconds stale_after, FileMode mode) {
  const std::string path = join_path(dir, name);
  timeout = saturate_duration(timeout);  // 1000000000000d: as long as kjit waits, never a negative
  stale_after = saturate_duration(stale_after);
  const auto start = Clock::now();
  LockWatch watch(dir_fd, name, stale_after);
  auto next_progress = start + std::max(progress_every, std::chrono::milliseconds(1));
  auto sleep_for = std::chrono::microseconds(500);
  int fd = -1;
  for (;;) {
    if (fd < 0) {
      std::string why;
      fd = open_lock_file(dir_fd, name.c_str(), mode, why);
      if (fd < 0) {
        return Failure{fmt::format("opening lock file {}: {}", path, why.empty() ? std::strerror(errno) : why)};
      }
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      if (still_linked(fd, dir_fd, name.c_str())) {
        const int own_dir = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
        if (own_dir < 0) {
          Failure failure{fmt::format("locking {}: {}", path, std::strerror(errno))};
          ::close(fd);
          return failure;
        }
        return FileLock(fd, own_dir, on_release == OnRelease::remove_file ? name : std::string());
      }
      ::close(fd);  // removed under us as stale: lock the new file instead
      fd = -1;
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) {
      Failure failure{fmt::format("locking {}: {}", path, std::strerror(errno))};
      ::close(fd);
      return failure;
    }
    const auto now = Clock::now();
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - start);
    if (waited >= timeout) {
      ::close(fd);
      return Failure{fmt::format("waiting for lock {}: still held by another process after {} ms", path,
                                 waited.count()),
                     Failure::Reason::timed_out};
    }
    if (stale_after.count() > 0 && watch.stalled()) {
      ::close(fd);
      return Failure{fmt::format("waiting for lock {}: its holder has shown no progress for {:.1f} s (alive but "
                                 "stopped: a signal, a debugger, a hung read?)",
                                 path, watch.quiet_for().count() / 1000.0),
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

}  // namespace kjit::system
