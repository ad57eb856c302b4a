// kjit::cache::PersistentStats: cache counters summed over every process that used a cache
// directory, for `kjit cache stats`. One small text file ("hits 12" per line), read and replaced
// whole (write_file_atomically) under a flock of the file itself, so a reader takes no lock and a
// writer killed at any point leaves the old totals or the new ones; each process adds only what it
// has not added before (StoreStats does the bookkeeping in flush). A damaged stats file counts as
// zero rather than failing anything; so does anything but a regular file there (a FIFO is never
// opened blocking: read with O_NONBLOCK, locked through FileLock, which refuses it). Never throws.
#pragma once

#include "core/cache/dir_trust.hpp"
#include "core/system/result.hpp"
#include "core/cache/stats.hpp"

#include <chrono>
#include <filesystem>
#include <string>

namespace kjit::cache {

class PersistentStats {
public:
  // `mode`: how the file is created when missing (a team cache's: 0660 exactly).
  explicit PersistentStats(std::filesystem::path file, system::FileMode mode = {}) : m_file(std::move(file)), m_mode(mode) {}
  // The file `name` inside the folder held open as `dir_fd` (named `dir` in messages; it must
  // outlive this object): locked, read and replaced through that descriptor only (cache::StoreFolder's).
  PersistentStats(int dir_fd, const std::string& dir, std::string name, system::FileMode mode = {});

  // Adds `delta` to the totals in the file (created if missing). A Failure when the file
  // cannot be written, or locked within `timeout` (Reason::timed_out).
  system::Result<void> add(const StatsSnapshot& delta, std::chrono::milliseconds timeout = std::chrono::seconds(5)) const;
  // The totals; all zero when the file is missing or unreadable.
  StatsSnapshot read() const;
  // Sets every total to zero.
  system::Result<void> reset() const;

  // The text form ("hits 3\nmisses 1\n...") and its parser (unknown lines are ignored).
  static std::string format(const StatsSnapshot& stats);
  static StatsSnapshot parse(std::string_view text);

  const std::filesystem::path& file() const { return m_file; }

private:
  system::Result<void> update(const StatsSnapshot* delta, std::chrono::milliseconds timeout) const;
  std::filesystem::path m_file;
  system::FileMode m_mode;
  int m_dir_fd = -1;  // with m_dir and m_name: the at-form; -1: m_file is a path
  std::string m_dir;
  std::string m_name;
};

}  // namespace kjit::cache
