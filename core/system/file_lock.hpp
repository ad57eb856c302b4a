// kjit::system::FileLock: an exclusive flock() on a file, released by the kernel when the holder
// dies and by the destructor otherwise, so a lock left by a killed process blocks no one. The
// lock file itself may be removed while unheld (prune does): acquire() notices and locks the
// new file. The file is reached from its folder's descriptor (openat, O_NOFOLLOW, O_NONBLOCK) and
// must be a regular file: a link, FIFO or device planted where it goes is refused, never followed
// nor waited on. Never throws; a Failure says why acquiring failed (Reason::timed_out: someone
// else holds it).
#pragma once

#include "core/system/file_mode.hpp"
#include "core/system/result.hpp"

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>

namespace kjit::system {

class FileLock {
public:
  // Whether release() also unlinks the lock file (while still holding it). Safe, because
  // acquire() checks that the file it locked is still the one at the path; it keeps a folder
  // of per-key lock files from growing without bound.
  enum class OnRelease { keep_file, remove_file };

  FileLock() = default;
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

  // Waits at most `timeout` (polling), calling progress(waited) about every `progress_every`.
  // With `stale_after` > 0, also stops once the lock file shows no progress (a heartbeat's
  // mtime) for that long: a Failure with Reason::stalled.
  // The file is created with `mode` when missing and never opened through a symbolic link.
  // A Failure on timeout (Reason::timed_out, "waiting for lock /c/l: still held by another
  // process after 100 ms") or when the lock file cannot be opened or locked (Reason::error).
  static Result<FileLock> acquire(const std::filesystem::path& path, std::chrono::milliseconds timeout,
                                  const std::function<void(std::chrono::milliseconds)>& progress,
                                  std::chrono::milliseconds progress_every,
                                  OnRelease on_release = OnRelease::keep_file,
                                  std::chrono::milliseconds stale_after = std::chrono::milliseconds(0),
                                  FileMode mode = {});
  // acquire() of the file `name` inside the folder held open as `dir_fd` (named `dir` in
  // messages): created, checked, re-checked and removed through that descriptor (the lock keeps
  // a duplicate of it), never through a path that could be swapped for a link meanwhile.
  static Result<FileLock> acquire_at(int dir_fd, const std::string& dir, const std::string& name,
                                     std::chrono::milliseconds timeout,
                                     const std::function<void(std::chrono::milliseconds)>& progress,
                                     std::chrono::milliseconds progress_every,
                                     OnRelease on_release = OnRelease::keep_file,
                                     std::chrono::milliseconds stale_after = std::chrono::milliseconds(0),
                                     FileMode mode = {});
  // One attempt, no waiting (held by someone else: Reason::timed_out).
  static Result<FileLock> try_acquire(const std::filesystem::path& path, OnRelease on_release = OnRelease::keep_file,
                                      FileMode mode = {});

  bool held() const { return m_fd >= 0; }
  // The locked file's descriptor (for reading or writing the file under the lock), or -1.
  int fd() const { return m_fd; }
  void release();

private:
  FileLock(int fd, int dir_fd, std::string remove_on_release)
      : m_fd(fd), m_dir_fd(dir_fd), m_remove_on_release(std::move(remove_on_release)) {}
  int m_fd = -1;
  int m_dir_fd = -1;                // the folder's (a duplicate, owned), for the unlink
  std::string m_remove_on_release;  // the name in that folder; empty: keep the file
};

}  // namespace kjit::system
