#include "core/cache/dir_trust.hpp"

#include "core/cache/config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <grp.h>
#include <unistd.h>
#include <vector>

namespace kjit::cache {

namespace {

constexpr mode_t k_team_dir_mode = S_IRWXU | S_IRWXG | S_ISGID;  // 2770
constexpr mode_t k_private_top_mode = S_IRWXU;                   // 0700
// Folders inside a private cache: the umask may only take bits away, never add write bits.
constexpr mode_t k_private_dir_mode = 0755;

bool owned_by_me_or_root(const struct stat& st) { return st.st_uid == ::geteuid() || st.st_uid == 0; }

bool is_my_group(gid_t gid) {
  if (gid == ::getegid()) return true;
  const int n = ::getgroups(0, nullptr);
  if (n <= 0) return false;
  std::vector<gid_t> groups(static_cast<std::size_t>(n));
  const int got = ::getgroups(n, groups.data());
  return got > 0 && std::find(groups.begin(), groups.begin() + got, gid) != groups.begin() + got;
}

// Whether `dir` is temp_fallback_cache_dir(): its last part first (kjit-cache-<uid>), which
// settles almost every folder without asking for the temporary folder's name.
bool is_temp_fallback(const std::string& dir) {
  // The name, then "/" before it: `"/" + name` inlined into a memmove GCC 12 -O3 warns of (-Wrestrict).
  const std::string name = temp_fallback_name();
  return dir.size() > name.size() && dir.compare(dir.size() - name.size(), name.size(), name) == 0 &&
         dir[dir.size() - name.size() - 1] == '/' && dir == temp_fallback_cache_dir();
}

std::string mode_text(const struct stat& st) { return fmt::format("{:04o}", st.st_mode & 07777); }

// Why `st` may not be used inside a cache of `sharing` and `group`, or empty.
std::string refusal(const struct stat& st, std::string_view path, DirSharing sharing, gid_t group) {
  if (st.st_mode & S_IWOTH) {
    return fmt::format("{} is writable by every user (mode {}): anyone could plant a kernel there", path, mode_text(st));
  }
  if (sharing == DirSharing::group && st.st_gid == group) return {};
  if (!owned_by_me_or_root(st)) {
    return sharing == DirSharing::group
               ? fmt::format("{} belongs to user {} and group {}, not to this user ({}) nor to the team cache's "
                             "group {}: its owner could plant a kernel there",
                             path, st.st_uid, st.st_gid, ::geteuid(), group)
               : fmt::format("{} belongs to user {}, not to this user ({}): its owner could plant a kernel there",
                             path, st.st_uid, ::geteuid());
  }
  if (st.st_mode & S_IWGRP) {
    return fmt::format("{} is writable by its group {} (mode {}){}: a member could plant a kernel there", path,
                       st.st_gid, mode_text(st),
                       sharing == DirSharing::group ? fmt::format(", not the team cache's group {}", group) : "");
  }
  return {};
}

}  // namespace

TrustedDir::TrustedDir(int fd, std::string path, DirSharing sharing, gid_t group)
    : m_fd(fd), m_path(std::move(path)), m_sharing(sharing), m_group(group) {}

TrustedDir::~TrustedDir() {
  if (m_fd >= 0) ::close(m_fd);
}

system::FileMode TrustedDir::file_mode() const {
  return m_sharing == DirSharing::group ? system::FileMode{0660, true} : system::FileMode{0644, false};
}

system::Result<void> TrustedDir::check(int fd, const struct stat& st, std::string_view path) const {
  std::string why = refusal(st, path, m_sharing, m_group);
  if (why.empty()) return {};
  if (st.st_uid == ::geteuid() && fd >= 0) {
    // Ours: mend it (written under another umask, or by a kjit before this check) and look again.
    struct stat now = st;
    if (m_sharing == DirSharing::group && now.st_gid != m_group && ::fchown(fd, static_cast<uid_t>(-1), m_group) == 0) {
      now.st_gid = m_group;
    }
    const mode_t allowed = m_sharing == DirSharing::group && now.st_gid == m_group ? ~mode_t{S_IWOTH}
                                                                                  : ~mode_t{S_IWGRP | S_IWOTH};
    const mode_t mended = now.st_mode & 07777 & allowed;
    if (mended != (now.st_mode & 07777) && ::fchmod(fd, mended) == 0) {
      now.st_mode = (now.st_mode & ~mode_t{07777}) | mended;
    }
    if (refusal(now, path, m_sharing, m_group).empty()) return {};
  }
  return system::Failure{std::move(why)};
}

system::Result<int> TrustedDir::open_folder(int parent_fd, const char* name, bool create) const {
  const std::string path = fmt::format("{}/{}", m_path, name);
  const mode_t mode = m_sharing == DirSharing::group ? k_team_dir_mode : k_private_dir_mode;
  bool made = false;
  if (create) {
    if (::mkdirat(parent_fd, name, mode) == 0) made = true;
    else if (errno != EEXIST) return system::Failure{fmt::format("creating directory {}: {}", path, std::strerror(errno))};
  }
  const int fd = ::openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP || err == ENOTDIR) {
      return system::Failure{fmt::format("{} is not a directory (a symbolic link or a file); kjit does not follow links "
                                 "inside its cache", path)};
    }
    return system::Failure{fmt::format("opening directory {}: {}", path, std::strerror(err))};
  }
  // The umask took bits away (a team cache needs g+w): set the mode exactly.
  if (made && m_sharing == DirSharing::group) ::fchmod(fd, mode);
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    system::Failure f{fmt::format("checking directory {}: {}", path, std::strerror(errno))};
    ::close(fd);
    return f;
  }
  if (auto ok = check(fd, st, path); !ok) {
    ::close(fd);
    return ok.error();
  }
  return fd;
}

system::Result<std::shared_ptr<const TrustedDir>> open_trusted_dir(const std::string& dir, DirSharing sharing, bool create) {
  // The fallback in the shared temp folder is where another user can get first: never a team
  // cache, never a link.
  const bool fallback = is_temp_fallback(dir);
  if (fallback) sharing = DirSharing::private_to_user;
  const bool group = sharing == DirSharing::group;
  const mode_t mode = group ? k_team_dir_mode : k_private_top_mode;
  bool made = false;
  if (create) {
    if (::mkdir(dir.c_str(), mode) == 0) {
      made = true;
    } else if (errno == ENOENT) {
      // Parents first (with the usual mode: ~/.cache is not kjit's), then the folder itself.
      std::error_code ec;
      std::filesystem::create_directories(std::filesystem::path(dir).parent_path(), ec);
      if (ec) return system::Failure{fmt::format("creating cache directory {}: {}", dir, ec.message())};
      if (::mkdir(dir.c_str(), mode) == 0) made = true;
      else if (errno != EEXIST) return system::Failure{fmt::format("creating cache directory {}: {}", dir, std::strerror(errno))};
    } else if (errno != EEXIST) {
      return system::Failure{fmt::format("creating cache directory {}: {}", dir, std::strerror(errno))};
    }
  }

  struct stat link{};
  if (::lstat(dir.c_str(), &link) != 0) {
    return system::Failure{fmt::format("checking cache directory {}: {}", dir, std::strerror(errno))};
  }
  if (S_ISLNK(link.st_mode) && (fallback || !owned_by_me_or_root(link))) {
    return system::Failure{fmt::format("cache directory {} is a symbolic link {}: someone could point it at a folder of "
                               "yours (or plant a kernel); not using it (remove it, or choose another "
                               "KJIT_CACHE_DIR)",
                               dir, fallback ? "in the shared temp folder" : fmt::format("of user {}", link.st_uid))};
  }
  // A link the user (or root) made is followed, once, here; the folder it names is the one checked
  // and held open.
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | (S_ISLNK(link.st_mode) ? 0 : O_NOFOLLOW));
  if (fd < 0) {
    const int err = errno;
    if (err == ENOTDIR || err == ELOOP) return system::Failure{fmt::format("cache directory {} is not a directory", dir)};
    return system::Failure{fmt::format("opening cache directory {}: {}", dir, std::strerror(err))};
  }
  // The umask may have taken bits away (a team cache needs g+w): set the mode exactly.
  if (made) ::fchmod(fd, mode);
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    system::Failure f{fmt::format("checking cache directory {}: {}", dir, std::strerror(errno))};
    ::close(fd);
    return f;
  }
  auto refuse = [&](std::string message) -> system::Result<std::shared_ptr<const TrustedDir>> {
    ::close(fd);
    return system::Failure{std::move(message)};
  };
  const uid_t me = ::geteuid();
  if (st.st_mode & S_IWOTH) {
    return refuse(fmt::format("cache directory {} is writable by every user (mode {}): anyone could plant a kernel "
                              "there; not using it (chmod o-w it, or choose another KJIT_CACHE_DIR)",
                              dir, mode_text(st)));
  }
  // Root may write anywhere anyway: a folder root owns and no one else may write into is as safe
  // as one's own (a read-only cache shipped in an image, used by an unprivileged user).
  if (st.st_uid != me && st.st_uid != 0) {
    return refuse(fmt::format("cache directory {} belongs to user {}, not to this user ({}): its owner could plant "
                              "a kernel there; not using it (remove it, or choose another KJIT_CACHE_DIR; a team "
                              "cache, KJIT_CACHE_SHARED=1, must belong to one of its members or root too)",
                              dir, st.st_uid, me));
  }
  if (group) {
    if (!is_my_group(st.st_gid)) {
      return refuse(fmt::format("team cache directory {} has group {}, which is not one of this user's groups: "
                                "its members could plant a kernel there; not using it (chgrp it to the team's "
                                "group)",
                                dir, st.st_gid));
    }
  } else if (st.st_mode & S_IWGRP) {
    return refuse(fmt::format("cache directory {} is writable by its group (mode {}): a member could plant a kernel "
                              "there; not using it (chmod g-w it, or set KJIT_CACHE_SHARED=1 for a team cache you "
                              "trust{})",
                              dir, mode_text(st), fallback ? "; not in the shared temp folder" : ""));
  }
  return std::shared_ptr<const TrustedDir>(std::make_shared<TrustedDir>(fd, dir, sharing, st.st_gid));
}

system::Result<void> prepare_trusted_dir(const std::string& dir, DirSharing sharing) {
  auto trusted = open_trusted_dir(dir, sharing, true);
  if (!trusted) return trusted.error();
  return {};
}

}  // namespace kjit::cache
