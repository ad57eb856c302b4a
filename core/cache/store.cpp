// cache::Store, the request path: reading an entry (a hit, a miss or damage), publishing one and
// counting it (the eviction it may start, over one scan of the folder: cache/store_scan), the
// per-key locks. The folder itself is cache/store_folder's.
#include "core/cache/store.hpp"

#include "core/system/atomic_file.hpp"
#include "core/cache/config.hpp"
#include "core/system/file_io.hpp"
#include "core/cache/store_scan.hpp"
#include "core/system/unique_fd.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kjit::cache {

namespace {

using namespace std::chrono_literals;

constexpr auto k_damage_lock_timeout = 1s;  // best effort: the next recount fixes the total

}  // namespace

GetResult Store::get(const Key& key) { return read_entry(key, false); }
GetResult Store::get_in_place(const Key& key) { return read_entry(key, true); }
GetResult Store::peek_in_place(const Key& key) { return read_entry(key, true, false); }

// The hit path of a fresh process: POSIX calls relative to the checked folder, one read, no
// std::filesystem, and with `in_place` no copy of any section. Neither the shard folder nor the
// entry is reached through a link; a FIFO or device where the entry goes is not opened blocking
// nor read; both must pass the folder's trust check.
GetResult Store::read_entry(const Key& key, bool in_place, bool touch) {
  GetResult result;
  auto fail = [&](GetResult::Outcome outcome, std::string message) {
    result.outcome = outcome;
    result.message = std::move(message);
    return result;
  };
  const TrustedDir* const top = m_folder->dir();
  if (top == nullptr) return fail(GetResult::Outcome::miss, {});  // refused, or not made yet
  const std::string hex = key.hex();
  const char shard_name[3] = {hex[0], hex[1], '\0'};
  const std::string name = hex.substr(2) + std::string(k_entry_suffix);
  const system::UniqueFd shard(::openat(top->fd(), shard_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (shard.get() < 0) {
    const int err = errno;
    if (err == ENOENT) return fail(GetResult::Outcome::miss, {});
    const std::string folder = m_folder->path(shard_name);
    if (err == ELOOP || err == ENOTDIR) {
      return fail(GetResult::Outcome::error,
                  fmt::format("cache folder {} is not a directory (a symbolic link?); not followed", folder));
    }
    return fail(GetResult::Outcome::error, fmt::format("opening cache folder {}: {}", folder, std::strerror(err)));
  }
  struct stat st{};
  if (::fstat(shard.get(), &st) != 0) {
    return fail(GetResult::Outcome::error, fmt::format("checking cache folder {}: {}", m_folder->path(shard_name), std::strerror(errno)));
  }
  if (auto ok = top->check(shard.get(), st, m_folder->path(shard_name)); !ok) {
    return fail(GetResult::Outcome::error, fmt::format("{}; not used", ok.error().message));
  }
  const system::UniqueFd file(::openat(shard.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (file.get() < 0) {
    const int err = errno;
    if (err == ENOENT) return fail(GetResult::Outcome::miss, {});
    if (err == ELOOP) {
      return fail(GetResult::Outcome::error,
                  fmt::format("cache entry {} is a symbolic link; kjit does not follow links inside its cache",
                              m_folder->entry_file(key)));
    }
    return fail(GetResult::Outcome::error, fmt::format("reading cache entry {}: {}", m_folder->entry_file(key), std::strerror(err)));
  }
  std::string bytes;
  if (::fstat(file.get(), &st) != 0) {
    return fail(GetResult::Outcome::error, fmt::format("reading cache entry {}: {}", m_folder->entry_file(key), std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return fail(GetResult::Outcome::error,
                fmt::format("cache entry {} is not a regular file (a FIFO, device or folder); not read", m_folder->entry_file(key)));
  }
  if (auto ok = top->check(file.get(), st, m_folder->entry_file(key)); !ok) {
    return fail(GetResult::Outcome::error, fmt::format("{}; not used", ok.error().message));
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (const int err = system::read_fd(file.get(), bytes, size, size); err != 0) {
    return fail(GetResult::Outcome::error, fmt::format("reading cache entry {}: {}", m_folder->entry_file(key), std::strerror(err)));
  }
  InPlaceParse parsed = parse_in_place(bytes);
  if (parsed.error.empty() && parsed.key != key) {
    parsed.error = fmt::format("it records key {}, not the key it was looked up under (a file copied or planted "
                               "under another name)", parsed.key.hex());
  }
  if (!parsed.error.empty()) {
    m_folder->stats().damaged.fetch_add(1, std::memory_order_relaxed);
    const int err = remove_damaged(shard.get(), name, static_cast<std::uint64_t>(st.st_size), st.st_dev, st.st_ino);
    return fail(GetResult::Outcome::damaged,
                fmt::format("cache entry {} is damaged ({}); {}", m_folder->entry_file(key), parsed.error,
                            err == 0 ? std::string("removed it")
                                     : fmt::format("could not remove {} ({})", m_folder->entry_file(key), std::strerror(err))));
  }
  // Last use for LRU eviction: mtime through the open descriptor, one syscall, atime untouched,
  // skipped while the recorded one is recent. Fails harmlessly on a read-only cache.
  struct timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  if (touch && now.tv_sec - st.st_mtim.tv_sec >= k_last_use_resolution.count()) {
    const struct timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
    ::futimens(file.get(), times);
  }
  m_folder->stats().bytes_read.fetch_add(bytes.size(), std::memory_order_relaxed);
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
  if (auto counter = m_folder->usage_counter()->lock(k_damage_lock_timeout)) {
    if (auto usage = counter->read()) {
      usage->entries -= std::min<std::uint64_t>(usage->entries, 1);
      usage->bytes -= std::min(usage->bytes, size);
      counter->write(*usage);
    }
  }
  return 0;
}

void Store::ensure_cachedir_tag(const TrustedDir& dir) {
  if (m_tag_checked.exchange(true, std::memory_order_relaxed)) return;
  write_cachedir_tag_at(dir.fd(), m_folder->config().dir, dir.file_mode());  // best effort: a missing tag harms no one
}

PutResult Store::put(const Key& key, const Entry& entry) { return put_bytes(key, serialize(key, entry)); }

PutResult Store::put_bytes(const Key& key, std::string_view bytes, Accounting accounting) {
  PutResult result;
  const std::string path = m_folder->entry_file(key);
  auto fail = [&](const std::string& why) {
    m_folder->stats().store_failures.fetch_add(1, std::memory_order_relaxed);
    result.message = fmt::format("storing cache entry {}: {}", path, why);
    return result;
  };
  const auto folder = m_folder->writable_dir();
  if (!folder) return fail(folder.error().message);
  const TrustedDir& trusted_dir = **folder;

  const std::string hex = key.hex();
  const char shard_name[3] = {hex[0], hex[1], '\0'};
  const std::string name = hex.substr(2) + std::string(k_entry_suffix);
  auto opened = trusted_dir.open_folder(trusted_dir.fd(), shard_name, true);
  if (!opened) return fail(opened.error().message);
  const system::UniqueFd shard(*opened);
  auto file = system::AtomicFile::create_at(shard.get(), m_folder->path(shard_name), name, trusted_dir.file_mode());
  if (!file) return fail(file.error().message);
  ensure_cachedir_tag(trusted_dir);
  if (auto written = file->write(bytes); !written) return fail(written.error().message);

  if (accounting == Accounting::deferred) {
    // Published now; counted later by account() (the background worker), without the usage
    // lock meanwhile: two processes replacing one entry at once may count it twice (a drift
    // the next recount heals, as after a killed writer).
    struct stat old{};
    const bool replaced = ::fstatat(shard.get(), name.c_str(), &old, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(old.st_mode);
    if (auto committed = file->commit(system::AtomicFile::Sync::no); !committed) return fail(committed.error().message);
    result.stored = true;
    m_folder->stats().bytes_written.fetch_add(bytes.size(), std::memory_order_relaxed);
    result.change = UsageChange{path, replaced, replaced ? static_cast<std::uint64_t>(old.st_size) : 0, bytes.size()};
    return result;
  }

  // Publish and count under the usage lock, so that replacing an entry is counted exactly.
  // Without the lock (held too long by someone) the entry is still published; the total
  // drifts until the next recount.
  auto counter = m_folder->usage_counter()->lock(StoreFolder::k_usage_lock_timeout);
  struct stat old{};
  const bool replaced = ::fstatat(shard.get(), name.c_str(), &old, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(old.st_mode);
  if (auto committed = file->commit(system::AtomicFile::Sync::no); !committed) return fail(committed.error().message);
  result.stored = true;
  m_folder->stats().bytes_written.fetch_add(bytes.size(), std::memory_order_relaxed);
  if (!counter) return result;
  const UsageChange change{path, replaced, replaced ? static_cast<std::uint64_t>(old.st_size) : 0, bytes.size()};
  result.evicted_entries = count_put(*counter, std::span(&change, 1));
  return result;
}

system::Result<system::FileLock> Store::lock(const Key& key, std::chrono::milliseconds timeout,
                             const std::function<void(std::chrono::milliseconds)>& progress,
                             std::chrono::milliseconds progress_every, std::chrono::milliseconds stale_after) {
  const auto top = m_folder->writable_dir();
  if (!top) return top.error();
  // The locks folder is made (2770 in a team cache) and checked like a shard; never a link. The
  // lock file is reached from its descriptor alone: a folder swapped for a link meanwhile is
  // never where it goes.
  auto folder = (*top)->open_folder((*top)->fd(), "locks", true);
  if (!folder) return folder.error();
  const system::UniqueFd locks(*folder);
  return system::FileLock::acquire_at(locks.get(), m_folder->path("locks"), key.hex() + ".lock", timeout, progress, progress_every,
                              system::FileLock::OnRelease::remove_file, stale_after, (*top)->file_mode());
}

std::uint64_t Store::account(const UsageChange& change) {
  UsageCounter* usage = m_folder->usage_counter();
  if (usage == nullptr || change.entry.empty()) return 0;
  auto counter = usage->lock(StoreFolder::k_background_lock_wait);
  if (!counter) return 0;
  return count_put(*counter, std::span(&change, 1));
}

std::uint64_t Store::account(std::span<const UsageChange> changes) {
  UsageCounter* usage = m_folder->usage_counter();
  if (usage == nullptr || changes.empty()) return 0;
  auto counter = usage->lock(StoreFolder::k_usage_lock_timeout);
  if (!counter) return 0;
  return count_put(*counter, changes);
}

std::uint64_t Store::count_put(UsageCounter::Locked& counter, std::span<const UsageChange> changes) {
  std::uint64_t evicted = 0;
  std::optional<Usage> usage = counter.read();
  if (!usage) {
    const Scan scan = scan_dir(m_folder->dir(), false);
    usage = Usage{scan.entries.size(), scan.bytes};
  } else {
    for (const UsageChange& change : changes) {
      if (change.entry.empty()) continue;
      if (change.replaced) usage->bytes -= std::min(usage->bytes, change.old_size);
      else usage->entries += 1;
      usage->bytes += change.new_size;
    }
  }
  if (m_folder->config().max_size != 0 && usage->bytes > m_folder->config().max_size) {
    // Over the limit: evict least recently used down to 90%, in this process, under the lock.
    const std::uint64_t target =
        m_folder->config().max_size / 100 * k_evict_to_percent + m_folder->config().max_size % 100 * k_evict_to_percent / 100;
    Scan scan = scan_dir(m_folder->dir(), false);
    const Eviction ev = evict_oldest(m_folder->dir()->fd(), scan, changes.back().entry,
                                     [&](const ScannedEntry&, std::uint64_t total) { return total > target; });
    evicted = ev.removed_entries;
    usage = Usage{ev.kept_entries, ev.kept_bytes};
    m_folder->stats().evictions.fetch_add(evicted, std::memory_order_relaxed);
  }
  counter.write(*usage);
  return evicted;
}

}  // namespace kjit::cache
