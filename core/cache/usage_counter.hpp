// kjit::cache::UsageCounter: the store's running total of entries and bytes, kept in one small
// file (<dir>/usage) that puts and evictions update under a short flock, so that a put need not
// scan the directory to know whether the cache is over its limit. The total can drift (a
// process killed between publishing an entry and counting it); prune and verify recount it.
// Never throws.
#pragma once

#include "core/system/file_lock.hpp"
#include "core/system/result.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace kjit::cache {

struct Usage {
  std::uint64_t entries = 0;
  std::uint64_t bytes = 0;
  friend bool operator==(const Usage&, const Usage&) = default;
};

class UsageCounter {
public:
  // `mode`: how the file is created when missing (a team cache's: 0660 exactly).
  explicit UsageCounter(std::string file, system::FileMode mode = {}) : m_file(std::move(file)), m_mode(mode) {}
  // The file `name` inside the folder held open as `dir_fd` (named `dir` in messages; it must
  // outlive this object): reached through that descriptor only, never a path (cache::StoreFolder's).
  UsageCounter(int dir_fd, const std::string& dir, std::string name, system::FileMode mode = {});

  // The counter file locked for a read-modify-write; the lock goes when this goes.
  class Locked {
  public:
    // nullopt when the file is new, short or not a counter (the caller recounts).
    std::optional<Usage> read() const;
    // Writes the counter and cuts the file to its size: a longer file (damaged) heals here.
    system::Result<void> write(const Usage& usage);

  private:
    friend class UsageCounter;
    explicit Locked(system::FileLock lock, std::filesystem::path file) : m_lock(std::move(lock)), m_file(std::move(file)) {}
    system::FileLock m_lock;
    std::filesystem::path m_file;
  };

  // Waits at most `timeout` for the lock; a Failure when it cannot be had (FileLock::acquire's).
  system::Result<Locked> lock(std::chrono::milliseconds timeout) const;

  // Reads without locking (a 24-byte pwrite is never seen torn in practice; nullopt if it is).
  std::optional<Usage> peek() const;

  const std::string& file() const { return m_file; }

private:
  std::string m_file;  // a string: a StoreFolder is built on the hit path, which touches no std::filesystem
  system::FileMode m_mode;
  int m_dir_fd = -1;   // with m_dir and m_name: the at-form; -1: m_file is a path
  std::string m_dir;
  std::string m_name;
};

}  // namespace kjit::cache
