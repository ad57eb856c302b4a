// kjit::cache::FileLock: an exclusive flock() on a file, released by the kernel when the holder
// dies and by the destructor otherwise. Never throws; try_acquire says why it failed.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace kjit::cache {

class FileLock {
public:
  FileLock() = default;
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

  // Waits at most `timeout` (polling), calling progress(waited) about every `progress_every`.
  // nullopt on timeout or when the lock file cannot be opened (`error` says which).
  static std::optional<FileLock> acquire(const std::filesystem::path& path,
                                         std::chrono::milliseconds timeout,
                                         const std::function<void(std::chrono::milliseconds)>& progress,
                                         std::chrono::milliseconds progress_every,
                                         std::string* error = nullptr);

  bool held() const { return m_fd >= 0; }
  void release();

private:
  explicit FileLock(int fd) : m_fd(fd) {}
  int m_fd = -1;
};

}  // namespace kjit::cache
