#include "cache/dir_trust.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace kjit::cache {

Result<void> prepare_trusted_dir(const std::string& dir, DirSharing sharing) {
  const bool group = sharing == DirSharing::group;
  const mode_t mode = group ? (S_IRWXU | S_IRWXG | S_ISGID) : S_IRWXU;
  if (::mkdir(dir.c_str(), mode) == 0) {
    // The umask may have taken bits away (a group cache needs g+w): set the mode exactly.
    if (::chmod(dir.c_str(), mode) != 0) {
      return Failure{fmt::format("setting the mode of cache directory {}: {}", dir, std::strerror(errno))};
    }
  } else if (errno == ENOENT) {
    // Parents first (with the usual mode: ~/.cache is not kjit's), then the folder itself.
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(dir).parent_path(), ec);
    if (ec) return Failure{fmt::format("creating cache directory {}: {}", dir, ec.message())};
    if (::mkdir(dir.c_str(), mode) != 0 && errno != EEXIST) {
      return Failure{fmt::format("creating cache directory {}: {}", dir, std::strerror(errno))};
    }
    ::chmod(dir.c_str(), mode);
  } else if (errno != EEXIST) {
    return Failure{fmt::format("creating cache directory {}: {}", dir, std::strerror(errno))};
  }

  struct stat st{};  // follows a link: the folder it names is the one that must be trusted
  if (::stat(dir.c_str(), &st) != 0) {
    return Failure{fmt::format("checking cache directory {}: {}", dir, std::strerror(errno))};
  }
  if (!S_ISDIR(st.st_mode)) return Failure{fmt::format("cache directory {} is not a directory", dir)};
  const uid_t me = ::geteuid();
  if (st.st_mode & S_IWOTH) {
    return Failure{fmt::format("cache directory {} is writable by every user (mode {:04o}): anyone could plant a "
                               "kernel there; not using it (chmod o-w it, or choose another KJIT_CACHE_DIR)",
                               dir, st.st_mode & 07777)};
  }
  if (group) return {};
  // Root may write anywhere anyway: a folder root owns and no one else may write into is as safe
  // as one's own (a read-only cache shipped in an image, used by an unprivileged user).
  if (st.st_uid != me && st.st_uid != 0) {
    return Failure{fmt::format("cache directory {} belongs to user {}, not to this user ({}): its owner could "
                               "plant a kernel there; not using it (remove it, choose another KJIT_CACHE_DIR, or "
                               "set KJIT_CACHE_SHARED=1 for a team cache you trust)",
                               dir, st.st_uid, me)};
  }
  if (st.st_mode & S_IWGRP) {
    return Failure{fmt::format("cache directory {} is writable by its group (mode {:04o}): a member could plant a "
                               "kernel there; not using it (chmod g-w it, or set KJIT_CACHE_SHARED=1 for a team "
                               "cache you trust)",
                               dir, st.st_mode & 07777)};
  }
  return {};
}

}  // namespace kjit::cache
