// kjit::cache::Store: the request path of the on-disk, content-addressed store (cache/store_folder.hpp
// has the folder's layout): an entry read and checked (a hit, a miss, damage), one published
// atomically (unique temporary + rename) and counted, with the least recently used evicted by the
// byte budget, and the per-key cross-process lock. Maintenance (list, verify, prune, clear, the
// recount) is StoreMaintenance's, notes StoreNotes', the persistent stats StoreStats', each over
// the same StoreFolder. It never throws for I/O trouble: results say hit / miss / damaged / error,
// and the caller decides. Thread-safe. Knows nothing of CUDA.
#pragma once

#include "core/system/tools_api.hpp"
#include "core/cache/entry.hpp"
#include "core/system/file_lock.hpp"
#include "core/cache/key.hpp"
#include "core/system/result.hpp"
#include "core/cache/store_folder.hpp"
#include "core/cache/usage_counter.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace kjit::cache {

struct GetResult {
  enum class Outcome { hit, miss, damaged, error } outcome = Outcome::miss;
  std::optional<Entry> entry;  // set on a hit of get()
  std::string message;         // for damaged and error: what went wrong, on which file
  // Set on a hit of get_in_place() instead of entry: the whole checked entry file and where
  // each section lies in it (nothing copied).
  std::string bytes;
  std::vector<SectionRef> sections;
};

// What a published entry changes in the usage total, for Store::account().
struct UsageChange {
  std::string entry;          // the entry's file (kept by an eviction); empty: nothing to count
  bool replaced = false;      // it replaced an entry of old_size bytes
  std::uint64_t old_size = 0;
  std::uint64_t new_size = 0;
};

struct PutResult {
  bool stored = false;
  std::string message;  // why not, when !stored ("writing /x/ab/cd.kjit: No space left on device")
  std::uint64_t evicted_entries = 0;
  UsageChange change;   // put_bytes(..., Accounting::deferred): what account() is to count
};

class Store {
public:
  // The request path of `folder` (shared with its other parts).
  explicit Store(std::shared_ptr<StoreFolder> folder) : m_folder(std::move(folder)) {}
  // ... of a folder of its own, opened here.
  explicit Store(StoreConfig config) : Store(std::make_shared<StoreFolder>(std::move(config))) {}

  const std::shared_ptr<StoreFolder>& folder() const { return m_folder; }
  std::filesystem::path entry_path(const Key& key) const { return m_folder->entry_path(key); }
  std::string entry_file(const Key& key) const { return m_folder->entry_file(key); }

  // Reads and checks the entry; a damaged one (this includes an entry that records another key
  // than `key`: copied or planted under a name not its own) is removed and reported as damaged (the caller
  // treats it as a miss). On a hit, records the last use in the entry's mtime (never atime)
  // unless the recorded last use is younger than k_last_use_resolution.
  GetResult get(const Key& key);
  // get() that leaves the sections in place: GetResult::bytes and ::sections instead of entry.
  GetResult get_in_place(const Key& key);
  // get_in_place() that leaves the last use alone: reading for a bundle export is no use.
  GetResult peek_in_place(const Key& key);
  // Publishes atomically; when the store goes over max_size, evicts least recently used.
  // Leaves no partial file behind on any failure.
  PutResult put(const Key& key, const Entry& entry);
  // When a put counts its entry in the usage total (and evicts when over max_size): now, under
  // the usage lock, or `deferred` to account() with PutResult::change (the compile service does it
  // on its background thread: the request path only publishes its entry).
  enum class Accounting { now, deferred };
  // put() of an entry already serialized for `key` (a remote hit written back to this disk).
  PutResult put_bytes(const Key& key, std::string_view bytes, Accounting accounting = Accounting::now);
  // Counts a deferred put's entry, evicting least recently used when over max_size; returns the
  // entries evicted. Without the usage lock within StoreFolder::k_background_lock_wait (held too
  // long) the total drifts until a recount.
  std::uint64_t account(const UsageChange& change);
  // Counts many deferred puts under one usage lock (waiting for it as long as a put does), then
  // evicts once if over max_size: a bundle import publishes entry after entry and counts them in
  // batches. Returns the entries evicted.
  std::uint64_t account(std::span<const UsageChange> changes);

  // The per-key cross-process lock (flock on <dir>/locks/...): released by the OS when the
  // holder dies. Waits at most `timeout`, calling `progress(waited_so_far)` about every
  // `progress_every` while it waits; a Failure when the bound passed (Reason::timed_out) or
  // locking is impossible (read-only directory; Reason::error), or with `stale_after` > 0 when
  // the holder showed no progress that long (Reason::stalled): the caller then compiles by itself.
  // A holder proves progress with a heartbeat on the lock's fd() (Background::heartbeat).
  system::Result<system::FileLock> lock(const Key& key, std::chrono::milliseconds timeout,
                                        const std::function<void(std::chrono::milliseconds)>& progress = {},
                                        std::chrono::milliseconds progress_every = std::chrono::seconds(5),
                                        std::chrono::milliseconds stale_after = std::chrono::milliseconds(0));

  // The counters the folder's parts count into (StoreFolder::stats()).
  const Stats& stats() const { return m_folder->stats(); }
  Stats& stats() { return m_folder->stats(); }

  // Automatic eviction brings the store down to this fraction of max_size (in percent).
  static constexpr std::uint64_t k_evict_to_percent = 90;
  // A hit rewrites an entry's last use only when the recorded one is older than this, as
  // relatime does for atime: most hits then cost no write, and LRU order is exact to within it.
  static constexpr std::chrono::seconds k_last_use_resolution{60};

private:
  GetResult read_entry(const Key& key, bool in_place, bool touch = true);
  std::uint64_t count_put(UsageCounter::Locked& counter, std::span<const UsageChange> changes);  // evicted entries
  // 0 when the damaged file is gone (or was replaced meanwhile), else the unlink's errno.
  int remove_damaged(int shard_fd, const std::string& name, std::uint64_t size, dev_t dev, ino_t ino);
  void ensure_cachedir_tag(const TrustedDir& dir);

  std::shared_ptr<StoreFolder> m_folder;
  std::atomic<bool> m_tag_checked{false};
};

}  // namespace kjit::cache
