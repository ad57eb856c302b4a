#include "cache/store.hpp"

#include "cache/atomic_file.hpp"
#include "cache/config.hpp"
#include "cache/file_io.hpp"
#include "cache/persistent_stats.hpp"
#include "cache/unique_fd.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <limits>
#include <sys/file.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace kjit::cache {

namespace {

using namespace std::chrono_literals;

constexpr std::string_view k_entry_suffix = ".kjit";
constexpr std::size_t k_entry_name_size = 30 + k_entry_suffix.size();
constexpr auto k_usage_lock_timeout = 10s;    // puts, prune: a scan of 100k entries takes ~1 s
constexpr auto k_damage_lock_timeout = 1s;  // best effort: the next recount fixes the total

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

std::int64_t to_ns(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// The "shard" of a temporary in the cache folder itself (the stats file's, CACHEDIR.TAG's).
constexpr unsigned k_top_folder = 256;

struct ScannedEntry {
  std::string path;
  std::uint64_t size = 0;
  std::int64_t last_use_ns = 0;  // mtime
  unsigned shard = 0;            // 0..255, from the folder name; k_top_folder
};

struct Scan {
  std::vector<ScannedEntry> entries;
  std::vector<ScannedEntry> temps;
  std::uint64_t bytes = 0;
  std::vector<Skipped> skipped;  // symbolic links where shards, entries or temporaries go
};

constexpr const char* k_link_reason = "a symbolic link; kjit does not follow links inside its cache";

// The file name of a scanned entry or temporary (the tail of its path).
const char* name_of(const ScannedEntry& e) { return e.path.c_str() + e.path.rfind('/') + 1; }

// The shard folder of scanned files, opened with O_NOFOLLOW: maintenance opens and unlinks files
// relative to it, so a shard folder replaced by a symbolic link after the scan is not followed
// either. Keeps the last shard open: callers go shard by shard.
class ShardFolder {
public:
  explicit ShardFolder(int top_fd) : m_top_fd(top_fd) {}
  ShardFolder(const ShardFolder&) = delete;
  ShardFolder& operator=(const ShardFolder&) = delete;
  ~ShardFolder() {
    if (m_fd >= 0) ::close(m_fd);
  }

  // The open folder of `e`, or -1 with errno set (gone, or no longer a folder: a link).
  int fd(const ScannedEntry& e) {
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

private:
  int m_top_fd;
  int m_fd = -1;
  int m_errno = 0;
  unsigned m_shard = k_top_folder + 1;  // none
};

// Unlinks a scanned file without following a link on the way: 0 when it is gone, else the errno
// of the failure (EROFS: a read-only cache).
int unlink_scanned(ShardFolder& folder, const ScannedEntry& e) {
  const int dir_fd = folder.fd(e);
  if (dir_fd < 0) return errno == ENOENT ? 0 : errno;
  return ::unlinkat(dir_fd, name_of(e), 0) == 0 || errno == ENOENT ? 0 : errno;
}

// One pass over <dir>/<2 hex>/: readdir and one fstatat per file, nothing else. Never follows a
// symbolic link: a shard folder, entry or temporary that is one is listed in `skipped` instead.
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
  const std::string base = join_path(dir->path(), "");
  while (const dirent* shard = ::readdir(top)) {
    if (with_temps && std::string_view(shard->d_name).starts_with(AtomicFile::k_temp_prefix)) {
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
      const bool temp = with_temps && name.starts_with(AtomicFile::k_temp_prefix);
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

// Removes lock files that no one holds (left by killed processes); held ones stay. A locks
// folder or lock file that is a symbolic link is not followed: listed in `skipped`.
void remove_unheld_locks(const TrustedDir& top, std::vector<Skipped>& skipped) {
  const std::filesystem::path locks = join_path(top.path(), "locks");
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

struct Eviction {
  std::uint64_t removed_entries = 0, removed_bytes = 0, kept_entries = 0, kept_bytes = 0;
  std::vector<NotRemoved> not_removed;
};

// The one LRU policy of the store (automatic eviction and prune alike): sorts the scanned
// entries least recently used first and removes them while `must_go(entry, bytes_still_kept)`
// says so, never the entry at `spare`. Entries that could not be unlinked count as kept.
template <class MustGo>
Eviction evict_oldest(int top_fd, Scan& scan, const std::string& spare, MustGo must_go) {
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

// The key a scanned entry's path names: .../<2 hex>/<30 hex>.kjit.
std::optional<Key> key_of_path(const std::string& path) {
  const std::size_t n = path.size();
  return Key::from_hex(path.substr(n - k_entry_name_size - 3, 2) + path.substr(n - k_entry_name_size, 30));
}

std::shared_ptr<const TrustedDir> open_dir(const StoreConfig& config, std::optional<Failure>& refused) {
  auto trusted = open_trusted_dir(config.dir, config.sharing, true);
  if (trusted) return *trusted;
  refused = trusted.error();
  return nullptr;
}

}  // namespace

Store::Store(StoreConfig config)
    : m_config(std::move(config)),
      m_dir(open_dir(m_config, m_refused)),
      m_stats(m_config.stats != nullptr ? *m_config.stats : m_own_stats),
      m_usage(sub("usage"), m_dir ? m_dir->file_mode() : FileMode{}) {}

Result<void> Store::trusted() const {
  if (m_refused) return *m_refused;
  return {};
}

std::string Store::sub(std::string_view name) const { return join_path(m_config.dir, name); }

std::string Store::entry_file(const Key& key) const {
  // <dir>/<2 hex>/<30 hex>.kjit, built in one string.
  const std::string hex = key.hex();
  std::string out = sub(std::string_view(hex).substr(0, 2));
  out.push_back('/');
  out.append(hex, 2, std::string::npos);
  out += k_entry_suffix;
  return out;
}

std::filesystem::path Store::entry_path(const Key& key) const { return entry_file(key); }

std::filesystem::path Store::lock_path(const Key& key) const { return sub("locks/" + key.hex() + ".lock"); }

GetResult Store::get(const Key& key) { return read_entry(key, false); }
GetResult Store::get_in_place(const Key& key) { return read_entry(key, true); }

// The hit path of a fresh process: POSIX calls relative to the checked folder, one read, no
// std::filesystem, and with `in_place` no copy of any section. Neither the shard folder nor the
// entry is reached through a link; a FIFO or device where the entry goes is not opened blocking
// nor read; both must pass the folder's trust check.
GetResult Store::read_entry(const Key& key, bool in_place) {
  GetResult result;
  auto fail = [&](GetResult::Outcome outcome, std::string message) {
    result.outcome = outcome;
    result.message = std::move(message);
    return result;
  };
  if (!m_dir) return fail(GetResult::Outcome::miss, {});
  const std::string hex = key.hex();
  const char shard_name[3] = {hex[0], hex[1], '\0'};
  const std::string name = hex.substr(2) + std::string(k_entry_suffix);
  const UniqueFd shard(::openat(m_dir->fd(), shard_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (shard.get() < 0) {
    const int err = errno;
    if (err == ENOENT) return fail(GetResult::Outcome::miss, {});
    const std::string folder = sub(shard_name);
    if (err == ELOOP || err == ENOTDIR) {
      return fail(GetResult::Outcome::error,
                  fmt::format("cache folder {} is not a directory (a symbolic link?); not followed", folder));
    }
    return fail(GetResult::Outcome::error, fmt::format("opening cache folder {}: {}", folder, std::strerror(err)));
  }
  struct stat st{};
  if (::fstat(shard.get(), &st) != 0) {
    return fail(GetResult::Outcome::error, fmt::format("checking cache folder {}: {}", sub(shard_name), std::strerror(errno)));
  }
  if (auto ok = m_dir->check(shard.get(), st, sub(shard_name)); !ok) {
    return fail(GetResult::Outcome::error, fmt::format("{}; not used", ok.error().message));
  }
  const UniqueFd file(::openat(shard.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (file.get() < 0) {
    const int err = errno;
    if (err == ENOENT) return fail(GetResult::Outcome::miss, {});
    if (err == ELOOP) {
      return fail(GetResult::Outcome::error,
                  fmt::format("cache entry {} is a symbolic link; kjit does not follow links inside its cache",
                              entry_file(key)));
    }
    return fail(GetResult::Outcome::error, fmt::format("reading cache entry {}: {}", entry_file(key), std::strerror(err)));
  }
  std::string bytes;
  if (::fstat(file.get(), &st) != 0) {
    return fail(GetResult::Outcome::error, fmt::format("reading cache entry {}: {}", entry_file(key), std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return fail(GetResult::Outcome::error,
                fmt::format("cache entry {} is not a regular file (a FIFO, device or folder); not read", entry_file(key)));
  }
  if (auto ok = m_dir->check(file.get(), st, entry_file(key)); !ok) {
    return fail(GetResult::Outcome::error, fmt::format("{}; not used", ok.error().message));
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (const int err = read_fd(file.get(), bytes, size, size); err != 0) {
    return fail(GetResult::Outcome::error, fmt::format("reading cache entry {}: {}", entry_file(key), std::strerror(err)));
  }
  InPlaceParse parsed = parse_in_place(bytes);
  if (parsed.error.empty() && parsed.key != key) {
    parsed.error = fmt::format("it records key {}, not the key it was looked up under (a file copied or planted "
                               "under another name)", parsed.key.hex());
  }
  if (!parsed.error.empty()) {
    m_stats.damaged.fetch_add(1, std::memory_order_relaxed);
    const int err = remove_damaged(shard.get(), name, static_cast<std::uint64_t>(st.st_size), st.st_dev, st.st_ino);
    return fail(GetResult::Outcome::damaged,
                fmt::format("cache entry {} is damaged ({}); {}", entry_file(key), parsed.error,
                            err == 0 ? std::string("removed it")
                                     : fmt::format("could not remove {} ({})", entry_file(key), std::strerror(err))));
  }
  // Last use for LRU eviction: mtime through the open descriptor, one syscall, atime untouched,
  // skipped while the recorded one is recent. Fails harmlessly on a read-only cache.
  struct timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  if (now.tv_sec - st.st_mtim.tv_sec >= k_last_use_resolution.count()) {
    const struct timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
    ::futimens(file.get(), times);
  }
  m_stats.bytes_read.fetch_add(bytes.size(), std::memory_order_relaxed);
  result.outcome = GetResult::Outcome::hit;
  if (in_place) {
    result.sections = std::move(parsed.sections);
    result.bytes = std::move(bytes);
  } else {
    Entry entry;
    entry.sections.reserve(parsed.sections.size());
    for (const SectionRef& sec : parsed.sections) {
      entry.sections.emplace_back(sec.kind, bytes.substr(sec.offset, sec.size));
    }
    result.entry = std::move(entry);
  }
  return result;
}

int Store::remove_damaged(int shard_fd, const std::string& name, std::uint64_t size, dev_t dev, ino_t ino) {
  // Only the file we read: a writer may have published a good entry at the path meanwhile.
  struct stat now{};
  if (::fstatat(shard_fd, name.c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0 || now.st_dev != dev || now.st_ino != ino) {
    return 0;  // gone, or replaced: not ours to remove
  }
  if (::unlinkat(shard_fd, name.c_str(), 0) != 0) return errno == ENOENT ? 0 : errno;
  if (auto counter = m_usage.lock(k_damage_lock_timeout)) {
    if (auto usage = counter->read()) {
      usage->entries -= std::min<std::uint64_t>(usage->entries, 1);
      usage->bytes -= std::min(usage->bytes, size);
      counter->write(*usage);
    }
  }
  return 0;
}

void Store::ensure_cachedir_tag() {
  if (m_tag_checked.exchange(true, std::memory_order_relaxed)) return;
  write_cachedir_tag_at(m_dir->fd(), m_config.dir, m_dir->file_mode());  // best effort: a missing tag harms no one
}

PutResult Store::put(const Key& key, const Entry& entry) { return put_bytes(key, serialize(key, entry)); }

PutResult Store::put_bytes(const Key& key, std::string_view bytes, Accounting accounting) {
  PutResult result;
  const std::string path = entry_file(key);
  auto fail = [&](const std::string& why) {
    m_stats.store_failures.fetch_add(1, std::memory_order_relaxed);
    result.message = fmt::format("storing cache entry {}: {}", path, why);
    return result;
  };
  if (!m_dir) return fail(m_refused->message);

  const std::string hex = key.hex();
  const char shard_name[3] = {hex[0], hex[1], '\0'};
  const std::string name = hex.substr(2) + std::string(k_entry_suffix);
  auto opened = m_dir->open_folder(m_dir->fd(), shard_name, true);
  if (!opened) return fail(opened.error().message);
  const UniqueFd shard(*opened);
  auto file = AtomicFile::create_at(shard.get(), sub(shard_name), name, m_dir->file_mode());
  if (!file) return fail(file.error().message);
  ensure_cachedir_tag();
  if (auto written = file->write(bytes); !written) return fail(written.error().message);

  if (accounting == Accounting::deferred) {
    // Published now; counted later by account() (the background worker), without the usage
    // lock meanwhile: two processes replacing one entry at once may count it twice (a drift
    // the next recount heals, as after a killed writer).
    struct stat old{};
    const bool replaced = ::fstatat(shard.get(), name.c_str(), &old, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(old.st_mode);
    if (auto committed = file->commit(AtomicFile::Sync::no); !committed) return fail(committed.error().message);
    result.stored = true;
    m_stats.bytes_written.fetch_add(bytes.size(), std::memory_order_relaxed);
    result.change = UsageChange{path, replaced, replaced ? static_cast<std::uint64_t>(old.st_size) : 0, bytes.size()};
    return result;
  }

  // Publish and count under the usage lock, so that replacing an entry is counted exactly.
  // Without the lock (held too long by someone) the entry is still published; the total
  // drifts until the next recount.
  auto counter = m_usage.lock(k_usage_lock_timeout);
  struct stat old{};
  const bool replaced = ::fstatat(shard.get(), name.c_str(), &old, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(old.st_mode);
  if (auto committed = file->commit(AtomicFile::Sync::no); !committed) return fail(committed.error().message);
  result.stored = true;
  m_stats.bytes_written.fetch_add(bytes.size(), std::memory_order_relaxed);
  if (!counter) return result;
  result.evicted_entries = count_put(
      *counter, UsageChange{path, replaced, replaced ? static_cast<std::uint64_t>(old.st_size) : 0, bytes.size()});
  return result;
}

std::uint64_t Store::account(const UsageChange& change) {
  if (!m_dir || change.entry.empty()) return 0;
  auto counter = m_usage.lock(k_background_lock_wait);
  if (!counter) return 0;
  return count_put(*counter, change);
}

std::uint64_t Store::count_put(UsageCounter::Locked& counter, const UsageChange& change) {
  std::uint64_t evicted = 0;
  std::optional<Usage> usage = counter.read();
  if (!usage) {
    const Scan scan = scan_dir(m_dir.get(), false);
    usage = Usage{scan.entries.size(), scan.bytes};
  } else {
    if (change.replaced) usage->bytes -= std::min(usage->bytes, change.old_size);
    else usage->entries += 1;
    usage->bytes += change.new_size;
  }
  if (m_config.max_size != 0 && usage->bytes > m_config.max_size) {
    // Over the limit: evict least recently used down to 90%, in this process, under the lock.
    const std::uint64_t target =
        m_config.max_size / 100 * k_evict_to_percent + m_config.max_size % 100 * k_evict_to_percent / 100;
    Scan scan = scan_dir(m_dir.get(), false);
    const Eviction ev = evict_oldest(m_dir->fd(), scan, change.entry,
                                     [&](const ScannedEntry&, std::uint64_t total) { return total > target; });
    evicted = ev.removed_entries;
    usage = Usage{ev.kept_entries, ev.kept_bytes};
    m_stats.evictions.fetch_add(evicted, std::memory_order_relaxed);
  }
  counter.write(*usage);
  return evicted;
}

Result<FileLock> Store::lock(const Key& key, std::chrono::milliseconds timeout,
                             const std::function<void(std::chrono::milliseconds)>& progress,
                             std::chrono::milliseconds progress_every, std::chrono::milliseconds stale_after) {
  if (!m_dir) return *m_refused;
  // The locks folder is made (2770 in a team cache) and checked like a shard; never a link.
  auto folder = m_dir->open_folder(m_dir->fd(), "locks", true);
  if (!folder) return folder.error();
  ::close(*folder);
  return FileLock::acquire(lock_path(key), timeout, progress, progress_every, FileLock::OnRelease::remove_file,
                           stale_after, m_dir->file_mode());
}

std::vector<EntryInfo> Store::list() const { return list_with_skipped().entries; }

ListResult Store::list_with_skipped() const {
  const Scan scan = scan_dir(m_dir.get(), false);
  ListResult result;
  result.skipped = scan.skipped;
  std::vector<EntryInfo>& out = result.entries;
  out.reserve(scan.entries.size());
  for (const auto& e : scan.entries) {
    auto key = key_of_path(e.path);
    if (!key) continue;
    EntryInfo info;
    info.key = *key;
    info.path = e.path;
    info.size = e.size;
    info.last_use = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(e.last_use_ns)));
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(), [](const EntryInfo& a, const EntryInfo& b) { return a.path < b.path; });
  return result;
}

VerifyResult Store::verify() {
  // Reading every entry may take a while: no lock meanwhile (puts go on); the usage total is
  // recounted afterwards under the lock, from a second scan that only stats.
  VerifyResult result;
  if (!m_dir) return result;
  const Scan scan = scan_dir(m_dir.get(), false);
  result.skipped = scan.skipped;
  std::string bytes;
  ShardFolder folder(m_dir->fd());  // the scan lists entries shard by shard
  for (const auto& e : scan.entries) {
    const int dir_fd = folder.fd(e);
    if (dir_fd < 0) continue;  // removed meanwhile, or replaced by a link: not followed
    // O_NONBLOCK: a name replaced by a FIFO meanwhile must not block the open.
    const int fd = ::openat(dir_fd, name_of(e), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;  // evicted meanwhile, or replaced by a link: not followed
    struct stat st{};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      continue;
    }
    const auto size = static_cast<std::uint64_t>(st.st_size);
    const int read_errno = read_fd(fd, bytes, size, size);
    ::close(fd);
    ParseResult parsed = read_errno == 0 ? parse(bytes) : ParseResult{std::nullopt, std::strerror(read_errno)};
    if (parsed.entry && parsed.key != key_of_path(e.path)) {
      parsed.error = fmt::format("it records key {}, not the key of its file name (copied or planted under another "
                                 "name)", parsed.key.hex());
      parsed.entry.reset();
    }
    if (parsed.entry) {
      result.ok += 1;
      continue;
    }
    result.damaged.emplace_back(e.path, parsed.error);
    m_stats.damaged.fetch_add(1, std::memory_order_relaxed);
    // Only the file we read: a writer may have published a good entry at the path meanwhile.
    struct stat now{};
    if (::fstatat(dir_fd, name_of(e), &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_dev == st.st_dev &&
        now.st_ino == st.st_ino && ::unlinkat(dir_fd, name_of(e), 0) != 0 && errno != ENOENT) {
      result.not_removed.push_back({e.path, std::strerror(errno)});
    }
  }
  if (auto counter = m_usage.lock(k_usage_lock_timeout)) {
    const Scan after = scan_dir(m_dir.get(), false);
    counter->write(Usage{after.entries.size(), after.bytes});
  }
  return result;
}

PruneResult Store::prune(std::uint64_t max_size, std::optional<std::chrono::seconds> older_than) {
  return shrink(max_size, older_than, Scope::prune);
}

PruneResult Store::clear() { return shrink(0, std::nullopt, Scope::clear); }

PruneResult Store::shrink(std::uint64_t max_size, std::optional<std::chrono::seconds> older_than, Scope scope) {
  PruneResult result;
  if (!m_dir) return result;
  auto counter = m_usage.lock(k_usage_lock_timeout);
  Scan scan = scan_dir(m_dir.get(), true);
  result.skipped = scan.skipped;
  const std::int64_t now_ns = to_ns(std::chrono::system_clock::now());
  const std::int64_t cutoff_ns =
      older_than ? now_ns - std::chrono::duration_cast<std::chrono::nanoseconds>(*older_than).count()
                 : std::numeric_limits<std::int64_t>::min();
  const std::uint64_t limit = scope == Scope::clear ? 0
                              : max_size == 0       ? std::numeric_limits<std::uint64_t>::max()
                                                    : max_size;

  // Oldest first: once one entry may stay, all newer ones may too.
  Eviction ev = evict_oldest(m_dir->fd(), scan, {}, [&](const ScannedEntry& e, std::uint64_t total) {
    return scope == Scope::clear || total > limit || e.last_use_ns < cutoff_ns;
  });
  result.removed_entries = ev.removed_entries;
  result.removed_bytes = ev.removed_bytes;
  std::uint64_t count = ev.kept_entries, total = ev.kept_bytes;
  result.kept_entries = count;
  result.kept_bytes = total;
  result.not_removed = std::move(ev.not_removed);
  m_stats.evictions.fetch_add(result.removed_entries, std::memory_order_relaxed);

  const std::int64_t stale_ns =
      scope == Scope::clear ? std::numeric_limits<std::int64_t>::max()
                            : now_ns - std::chrono::duration_cast<std::chrono::nanoseconds>(k_stale_temp_age).count();
  ShardFolder folder(m_dir->fd());  // the scan lists temporaries shard by shard
  for (const auto& t : scan.temps) {
    if (t.last_use_ns < stale_ns) unlink_scanned(folder, t);
  }
  remove_unheld_locks(*m_dir, result.skipped);
  if (counter) counter->write(Usage{count, total});
  return result;
}

Usage Store::usage() {
  if (!m_dir) return {};
  auto counter = m_usage.lock(k_usage_lock_timeout);
  if (counter) {
    if (auto usage = counter->read()) return *usage;
  } else if (auto usage = m_usage.peek()) {
    return *usage;
  }
  const Scan scan = scan_dir(m_dir.get(), false);
  Usage usage{scan.entries.size(), scan.bytes};
  if (counter) counter->write(usage);
  return usage;
}

Result<void> Store::flush_stats(std::chrono::milliseconds timeout) {
  std::lock_guard lock(m_flush_mutex);
  const StatsSnapshot now = m_stats.snapshot();
  StatsSnapshot delta = now;
  delta -= m_flushed;
  if (delta == StatsSnapshot{}) return {};
  if (!m_dir) return *m_refused;
  if (auto added = PersistentStats(sub("stats"), m_dir->file_mode()).add(delta, timeout); !added) return added;
  m_flushed = now;
  return {};
}

StatsSnapshot Store::read_persistent_stats() const {
  if (!m_dir) return {};
  return PersistentStats(sub("stats")).read();
}

Result<void> Store::reset_persistent_stats() {
  if (!m_dir) return *m_refused;
  return PersistentStats(sub("stats"), m_dir->file_mode()).reset();
}

}  // namespace kjit::cache
