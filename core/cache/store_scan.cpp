#include "core/system/units.hpp"
#include "core/cache/store_scan.hpp"

#include "core/system/atomic_file.hpp"
#include "core/cache/config.hpp"

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace kjit::cache {

namespace {

constexpr const char* k_link_reason = "a symbolic link; kjit does not follow links inside its cache";

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

bool is_shard_name(const char* name) {
  return is_hex(name[0]) && is_hex(name[1]) && name[2] == '\0';
}

bool is_entry_name(std::string_view name) {
  if (name.size() != k_entry_name_size || !name.ends_with(k_entry_suffix)) return false;
  return std::all_of(name.begin(), name.begin() + 30, is_hex);
}

std::int64_t mtime_ns(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

// Unlinks the files, several threads at a time when there are many: unlinking files whose
// blocks are on disk waits on the journal (and on TRIM where the file system discards
// online), and overlapping those waits is what keeps a 100,000-entry prune short. Each
// thread takes whole shard folders, so threads do not contend for one directory.
// Returns, per file, 0 when it is gone, else the errno of the failed unlink.
std::vector<int> unlink_all(int top_fd, const std::vector<const ScannedEntry*>& victims) {
  std::vector<int> removed(victims.size(), 0);
  constexpr std::size_t k_per_thread = 2000, k_max_threads = 4;
  const unsigned threads =
      static_cast<unsigned>(std::min(k_max_threads, std::max<std::size_t>(1, victims.size() / k_per_thread)));
  auto work = [&](unsigned t) {
    std::vector<std::size_t> mine;  // shard by shard, each shard folder opened once
    for (std::size_t i = 0; i < victims.size(); ++i) {
      if (victims[i]->shard % threads == t) mine.push_back(i);
    }
    std::stable_sort(mine.begin(), mine.end(),
                     [&](std::size_t a, std::size_t b) { return victims[a]->shard < victims[b]->shard; });
    ShardFolder folder(top_fd);
    for (const std::size_t i : mine) removed[i] = unlink_scanned(folder, *victims[i]);
  };
  if (threads == 1) {
    work(0);
    return removed;
  }
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work, t);
  for (auto& th : pool) th.join();
  return removed;
}

}  // namespace

ShardFolder::~ShardFolder() {
  if (m_fd >= 0) ::close(m_fd);
}

int ShardFolder::fd(const ScannedEntry& e) {
  if (e.shard == k_top_folder) return m_top_fd;
  if (e.shard != m_shard) {
    if (m_fd >= 0) ::close(m_fd);
    const std::string folder = e.path.substr(0, e.path.rfind('/'));
    const std::string name = folder.substr(folder.rfind('/') + 1);
    m_fd = ::openat(m_top_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    m_errno = errno;
    m_shard = e.shard;
  }
  if (m_fd < 0) errno = m_errno;
  return m_fd;
}

int unlink_scanned(ShardFolder& folder, const ScannedEntry& e) {
  const int dir_fd = folder.fd(e);
  if (dir_fd < 0) return errno == ENOENT ? 0 : errno;
  return ::unlinkat(dir_fd, name_of(e), 0) == 0 || errno == ENOENT ? 0 : errno;
}

Scan scan_dir(const TrustedDir* dir, bool with_temps) {
  Scan scan;
  if (dir == nullptr) return scan;  // not trusted: nothing is read
  const int top_fd = ::openat(dir->fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (top_fd < 0) return scan;
  DIR* top = ::fdopendir(top_fd);
  if (top == nullptr) {
    ::close(top_fd);
    return scan;
  }
  const std::string base = system::join_path(dir->path(), "");
  while (const dirent* shard = ::readdir(top)) {
    if (with_temps && std::string_view(shard->d_name).starts_with(system::AtomicFile::k_temp_prefix)) {
      struct stat st{};
      if (::fstatat(::dirfd(top), shard->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (S_ISLNK(st.st_mode)) scan.skipped.push_back({base + shard->d_name, k_link_reason});
      if (S_ISREG(st.st_mode)) {
        scan.temps.push_back({base + shard->d_name, static_cast<std::uint64_t>(st.st_size), mtime_ns(st), k_top_folder});
      }
      continue;
    }
    if (!is_shard_name(shard->d_name)) continue;
    const int fd = ::openat(::dirfd(top), shard->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      struct stat st{};
      if (::fstatat(::dirfd(top), shard->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
        scan.skipped.push_back({base + shard->d_name, k_link_reason});
      }
      continue;
    }
    DIR* sub = ::fdopendir(fd);
    if (sub == nullptr) {
      ::close(fd);
      continue;
    }
    const std::string prefix = base + shard->d_name + "/";
    while (const dirent* file = ::readdir(sub)) {
      const std::string_view name = file->d_name;
      const bool entry = is_entry_name(name);
      const bool temp = with_temps && name.starts_with(system::AtomicFile::k_temp_prefix);
      if (!entry && !temp) continue;
      struct stat st{};
      if (::fstatat(fd, file->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (S_ISLNK(st.st_mode)) scan.skipped.push_back({prefix + file->d_name, k_link_reason});
      if (!S_ISREG(st.st_mode)) continue;
      ScannedEntry e{prefix + file->d_name, static_cast<std::uint64_t>(st.st_size), mtime_ns(st),
                     static_cast<unsigned>(std::stoul(std::string(shard->d_name, 2), nullptr, 16))};
      if (entry) {
        scan.bytes += e.size;
        scan.entries.push_back(std::move(e));
      } else {
        scan.temps.push_back(std::move(e));
      }
    }
    ::closedir(sub);
  }
  ::closedir(top);
  return scan;
}

void remove_unheld_locks(const TrustedDir& top, std::vector<Skipped>& skipped) {
  const std::filesystem::path locks = system::join_path(top.path(), "locks");
  const int dir_fd = ::openat(top.fd(), "locks", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir_fd < 0) {
    struct stat st{};
    if (::fstatat(top.fd(), "locks", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
      skipped.push_back({locks.string(), k_link_reason});
    }
    return;
  }
  DIR* d = ::fdopendir(dir_fd);
  if (d == nullptr) {
    ::close(dir_fd);
    return;
  }
  std::vector<std::string> names;
  while (const dirent* file = ::readdir(d)) {
    if (!std::string_view(file->d_name).ends_with(".lock")) continue;
    struct stat st{};
    if (::fstatat(dir_fd, file->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      skipped.push_back({(locks / file->d_name).string(), k_link_reason});
      continue;
    }
    if (S_ISREG(st.st_mode)) names.push_back(file->d_name);
  }
  // What FileLock::try_acquire with OnRelease::remove_file does, relative to the folder and with
  // O_NOFOLLOW (a lock file replaced by a link meanwhile is not followed), creating nothing:
  // lock, check that the name is still the file locked (a holder may have removed it and another
  // made a new one), unlink while holding (a process that opened it meanwhile retries).
  for (const auto& name : names) {
    constexpr int k_flags = O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
    int fd = ::openat(dir_fd, name.c_str(), O_RDWR | k_flags);
    if (fd < 0 && (errno == EACCES || errno == EROFS)) fd = ::openat(dir_fd, name.c_str(), O_RDONLY | k_flags);
    if (fd < 0) continue;
    struct stat by_fd{}, by_name{};
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && ::fstat(fd, &by_fd) == 0 && S_ISREG(by_fd.st_mode) &&
        ::fstatat(dir_fd, name.c_str(), &by_name, AT_SYMLINK_NOFOLLOW) == 0 && by_name.st_dev == by_fd.st_dev &&
        by_name.st_ino == by_fd.st_ino) {
      ::unlinkat(dir_fd, name.c_str(), 0);
    }
    ::close(fd);  // drops the lock
  }
  ::closedir(d);
}

Eviction evict_oldest(int top_fd, Scan& scan, const std::string& spare, const MustGo& must_go) {
  std::sort(scan.entries.begin(), scan.entries.end(),
            [](const ScannedEntry& a, const ScannedEntry& b) { return a.last_use_ns < b.last_use_ns; });
  Eviction ev{0, 0, scan.entries.size(), scan.bytes};
  std::vector<const ScannedEntry*> victims;
  std::uint64_t total = scan.bytes;
  for (const auto& e : scan.entries) {
    if (!must_go(e, total)) break;
    if (!spare.empty() && e.path == spare) continue;
    victims.push_back(&e);
    total -= e.size;
  }
  const std::vector<int> failed = unlink_all(top_fd, victims);
  for (std::size_t i = 0; i < victims.size(); ++i) {
    if (failed[i] != 0) {
      ev.not_removed.push_back({victims[i]->path, std::strerror(failed[i])});
      continue;
    }
    ev.removed_entries += 1;
    ev.removed_bytes += victims[i]->size;
  }
  ev.kept_entries -= ev.removed_entries;
  ev.kept_bytes -= ev.removed_bytes;
  return ev;
}

std::optional<Key> key_of_path(const std::string& path) {
  const std::size_t n = path.size();
  return Key::from_hex(path.substr(n - k_entry_name_size - 3, 2) + path.substr(n - k_entry_name_size, 30));
}

}  // namespace kjit::cache
