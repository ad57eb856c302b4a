// cache::StoreMaintenance: the listing, verify, prune and clear, and the usage recount, over one
// scan of the folder each (cache/store_scan).
#include "core/cache/store_maintenance.hpp"

#include "core/system/units.hpp"
#include "core/cache/entry.hpp"
#include "core/system/file_io.hpp"
#include "core/cache/store_scan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

namespace kjit::cache {

namespace {

std::int64_t to_ns(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

std::vector<EntryInfo> StoreMaintenance::list() const { return list_with_skipped().entries; }

ListResult StoreMaintenance::list_with_skipped() const {
  const Scan scan = scan_dir(m_folder->dir(), false);
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

VerifyResult StoreMaintenance::verify() {
  // Reading every entry may take a while: no lock meanwhile (puts go on); the usage total is
  // recounted afterwards under the lock, from a second scan that only stats.
  VerifyResult result;
  const TrustedDir* top = m_folder->dir();
  if (top == nullptr) return result;
  const Scan scan = scan_dir(top, false);
  result.skipped = scan.skipped;
  std::string bytes;
  ShardFolder folder(top->fd());  // the scan lists entries shard by shard
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
    const int read_errno = system::read_fd(fd, bytes, size, size);
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
    m_folder->stats().damaged.fetch_add(1, std::memory_order_relaxed);
    // Only the file we read: a writer may have published a good entry at the path meanwhile.
    struct stat now{};
    if (::fstatat(dir_fd, name_of(e), &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_dev == st.st_dev &&
        now.st_ino == st.st_ino && ::unlinkat(dir_fd, name_of(e), 0) != 0 && errno != ENOENT) {
      result.not_removed.push_back({e.path, std::strerror(errno)});
    }
  }
  if (auto counter = m_folder->usage_counter()->lock(StoreFolder::k_usage_lock_timeout)) {
    const Scan after = scan_dir(top, false);
    counter->write(Usage{after.entries.size(), after.bytes});
  }
  return result;
}

PruneResult StoreMaintenance::prune(std::uint64_t max_size, std::optional<std::chrono::seconds> older_than) {
  return shrink(max_size, older_than, Scope::prune);
}

PruneResult StoreMaintenance::clear() { return shrink(0, std::nullopt, Scope::clear); }

PruneResult StoreMaintenance::shrink(std::uint64_t max_size, std::optional<std::chrono::seconds> older_than, Scope scope) {
  PruneResult result;
  const TrustedDir* top = m_folder->dir();
  if (top == nullptr) return result;
  auto counter = m_folder->usage_counter()->lock(StoreFolder::k_usage_lock_timeout);
  Scan scan = scan_dir(top, true);
  result.skipped = scan.skipped;
  const std::int64_t now_ns = to_ns(std::chrono::system_clock::now());
  const std::int64_t cutoff_ns =
      older_than ? now_ns - std::chrono::duration_cast<std::chrono::nanoseconds>(
                                system::saturate_duration(*older_than)).count()  // 200000d: before any entry
                 : std::numeric_limits<std::int64_t>::min();
  const std::uint64_t limit = scope == Scope::clear ? 0
                              : max_size == 0       ? std::numeric_limits<std::uint64_t>::max()
                                                    : max_size;

  // Oldest first: once one entry may stay, all newer ones may too.
  Eviction ev = evict_oldest(top->fd(), scan, {}, [&](const ScannedEntry& e, std::uint64_t total) {
    return scope == Scope::clear || total > limit || e.last_use_ns < cutoff_ns;
  });
  result.removed_entries = ev.removed_entries;
  result.removed_bytes = ev.removed_bytes;
  std::uint64_t count = ev.kept_entries, total = ev.kept_bytes;
  result.kept_entries = count;
  result.kept_bytes = total;
  result.not_removed = std::move(ev.not_removed);
  m_folder->stats().evictions.fetch_add(result.removed_entries, std::memory_order_relaxed);

  const std::int64_t stale_ns =
      scope == Scope::clear ? std::numeric_limits<std::int64_t>::max()
                            : now_ns - std::chrono::duration_cast<std::chrono::nanoseconds>(k_stale_temp_age).count();
  ShardFolder folder(top->fd());  // the scan lists temporaries shard by shard
  for (const auto& t : scan.temps) {
    if (t.last_use_ns < stale_ns) unlink_scanned(folder, t);
  }
  remove_unheld_locks(*top, result.skipped);
  if (counter) counter->write(Usage{count, total});
  return result;
}

Usage StoreMaintenance::usage() {
  const TrustedDir* top = m_folder->dir();
  if (top == nullptr) return {};
  auto counter = m_folder->usage_counter()->lock(StoreFolder::k_usage_lock_timeout);
  if (counter) {
    if (auto usage = counter->read()) return *usage;
  } else if (auto usage = m_folder->usage_counter()->peek()) {
    return *usage;
  }
  const Scan scan = scan_dir(top, false);
  Usage usage{scan.entries.size(), scan.bytes};
  if (counter) counter->write(usage);
  return usage;
}

}  // namespace kjit::cache
