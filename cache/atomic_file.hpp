// kjit::cache::AtomicFile: writes a file so that readers see either the old content or the
// whole new content, never a part. Bytes go to a unique temporary beside the target
// (".tmp.<name>.<random>", created O_EXCL with mode 0666 & ~umask); commit() renames it over
// the target. Destroying an AtomicFile that was not committed removes the temporary, and every
// failure (write, fsync, rename) removes it too, so no partial file is ever left behind by a
// process that lives. Never throws; failures come back as a Failure (cache/result.hpp).
#pragma once

#include "cache/result.hpp"

#include <filesystem>
#include <string>
#include <string_view>

namespace kjit::cache {

class AtomicFile {
public:
  enum class Sync { no, yes };  // fsync the data before the rename

  // Prefix of every temporary name: prune() removes stale ones left by killed processes.
  static constexpr std::string_view k_temp_prefix = ".tmp.";

  // Creates the temporary beside `target` (the folder must exist). A Failure when it cannot
  // ("creating temporary for /c/ab/cd.kjit in /c/ab: Read-only file system").
  static Result<AtomicFile> create(const std::filesystem::path& target);

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  // Appends bytes. On failure (ENOSPC, EFBIG, EIO...) the temporary is removed at once and
  // every later call fails.
  Result<void> write(std::string_view bytes);
  // Closes (and with Sync::yes, fsyncs) the temporary and renames it over the target.
  Result<void> commit(Sync sync = Sync::no);
  // Removes the temporary now; the target is untouched.
  void discard();

  const std::filesystem::path& target() const { return m_target; }
  const std::filesystem::path& temp_path() const { return m_temp; }
  bool committed() const { return m_committed; }

private:
  AtomicFile(std::filesystem::path target, std::filesystem::path temp, int fd)
      : m_target(std::move(target)), m_temp(std::move(temp)), m_fd(fd) {}
  // Marks the file failed and removes the temporary; the message is built (errno read) before.
  Failure fail(std::string message);

  std::filesystem::path m_target;
  std::filesystem::path m_temp;
  int m_fd = -1;
  bool m_committed = false;
  bool m_failed = false;
};

}  // namespace kjit::cache
