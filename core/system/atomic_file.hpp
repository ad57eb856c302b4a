// kjit::system::AtomicFile: writes a file so that readers see either the old content or the
// whole new content, never a part. Bytes go to a unique temporary beside the target
// (".tmp.<name>.<random>", created O_EXCL|O_NOFOLLOW with mode 0666 & ~umask, or the FileMode
// given); commit() renames it over the target. A write past RLIMIT_FSIZE fails with EFBIG (SIGXFSZ
// is blocked around it, cache/blocked_signal.hpp) like any other failed write. Destroying an AtomicFile that was not committed removes the temporary, and every
// failure (write, fsync, rename) removes it too, so no partial file is ever left behind by a
// process that lives. Never throws; failures come back as a Failure (cache/result.hpp).
#pragma once

#include "core/system/file_mode.hpp"
#include "core/system/result.hpp"

#include <filesystem>
#include <string>
#include <string_view>

namespace kjit::system {

class AtomicFile {
public:
  enum class Sync { no, yes };  // fsync the data before the rename

  // Prefix of every temporary name: prune() removes stale ones left by killed processes.
  static constexpr std::string_view k_temp_prefix = ".tmp.";

  // Creates the temporary beside `target` (the folder must exist) with `mode`. A Failure when it
  // cannot ("creating temporary for /c/ab/cd.kjit in /c/ab: Read-only file system").
  static Result<AtomicFile> create(const std::filesystem::path& target, FileMode mode = {});
  // The same for the file `name` inside the open folder `dir_fd` (named `dir` in messages): every
  // later call (write, rename, unlink) goes through that folder's descriptor, not a path.
  static Result<AtomicFile> create_at(int dir_fd, const std::string& dir, const std::string& name, FileMode mode);

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
  AtomicFile(std::filesystem::path target, std::filesystem::path temp, int fd, int dir_fd, std::string target_name,
             std::string temp_name)
      : m_target(std::move(target)),
        m_temp(std::move(temp)),
        m_fd(fd),
        m_dir_fd(dir_fd),
        m_target_name(std::move(target_name)),
        m_temp_name(std::move(temp_name)) {}
  // Marks the file failed and removes the temporary; the message is built (errno read) before.
  Failure fail(std::string message);

  std::filesystem::path m_target;
  std::filesystem::path m_temp;
  int m_fd = -1;
  int m_dir_fd = -1;          // the folder's own descriptor (create_at), or AT_FDCWD
  std::string m_target_name;  // relative to m_dir_fd
  std::string m_temp_name;
  bool m_committed = false;
  bool m_failed = false;
};

}  // namespace kjit::system
