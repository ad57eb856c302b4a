// kjit::cache::Store: the on-disk, content-addressed store. One file per entry at
// <dir>/<2 hex>/<30 hex>.kjit, published atomically (unique temporary + rename), checked on
// every read, evicted least-recently-used by a byte budget. It never throws for I/O trouble:
// results say hit / miss / damaged / error, and the caller decides. Knows nothing of CUDA.
//
// Layout of a cache directory:
//   CACHEDIR.TAG            written on the first put
//   <2 hex>/<30 hex>.kjit   entries; mtime = last use (see k_last_use_resolution), never atime
//   <2 hex>/.tmp.*          temporaries being written (stale ones are removed by prune/clear)
//   locks/<32 hex>.lock     per-key flock files, removed by their holder on release
//   usage                   running total of entries and bytes (UsageCounter)
//   stats                   counters of every process (PersistentStats, replaced whole)
//   .tmp.*                  the temporaries of stats, notes and CACHEDIR.TAG (removed as the shards' are)
//   import                  a note: the journal of a bundle import in progress (core/cache/bundle.hpp)
// Thread-safe: one Store may serve many threads. After fork() the child's Store flushes only the
// counts it made itself (the parent's, counted before the fork, are the parent's to flush).
#pragma once

#include "core/system/tools_api.hpp"
#include "core/system/at_fork.hpp"
#include "core/cache/dir_trust.hpp"
#include "core/cache/entry.hpp"
#include "core/system/file_lock.hpp"
#include "core/cache/key.hpp"
#include "core/system/result.hpp"
#include "core/cache/stats.hpp"
#include "core/cache/usage_counter.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <sys/types.h>
#include <vector>

namespace kjit::cache {

struct StoreConfig {
  std::string dir;  // a string, not a path: a hit touches no std::filesystem (see get())
  std::uint64_t max_size = 2ull << 30;  // bytes; 0 = unlimited
  DirSharing sharing = DirSharing::private_to_user;  // group: a team cache (KJIT_CACHE_SHARED)
  Stats* stats = nullptr;  // the table this store counts into (a Runtime's one list); null: its own
  // A folder that does not exist yet, in a parent this user may write into, is made (and checked)
  // by the first write instead of by the constructor: a process whose requests the remote tier
  // answers makes it on the worker, off the request's path. Reads of it meanwhile are misses. A
  // folder that exists, or one that cannot be made by a write, is opened and checked at once.
  bool create_when_writing = false;
};

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

struct EntryInfo {
  Key key;
  std::filesystem::path path;
  std::uint64_t size = 0;
  std::chrono::system_clock::time_point last_use;
};

// A path inside the cache that maintenance left alone, and why (a symbolic link: ls, verify,
// prune and clear never follow one, never read through it and never remove what it points to).
struct Skipped {
  std::string path;
  std::string why;
};

struct ListResult {
  std::vector<EntryInfo> entries;  // sorted by path
  std::vector<Skipped> skipped;
};

// A file maintenance meant to remove and could not, and why ("Read-only file system").
struct NotRemoved {
  std::string path;
  std::string why;
};

struct PruneResult {
  std::uint64_t removed_entries = 0;
  std::uint64_t removed_bytes = 0;
  std::uint64_t kept_entries = 0;
  std::uint64_t kept_bytes = 0;
  std::vector<Skipped> skipped;
  std::vector<NotRemoved> not_removed;  // entries that should have gone and are still there (kept)
};

struct VerifyResult {
  std::uint64_t ok = 0;  // damaged entries are removed from the store and listed here
  std::vector<std::pair<std::filesystem::path, std::string>> damaged;  // path, why
  std::vector<Skipped> skipped;
  std::vector<NotRemoved> not_removed;  // damaged entries that could not be removed
};

class Store {
public:
  // Opens (creating it when missing) and checks the folder: cache/dir_trust, the one place
  // trust is decided. A folder that fails is never read or written: see trusted().
  KJIT_TOOLS_API explicit Store(StoreConfig config);

  // Whether the folder passed the trust check; the Failure says why not and how to fix it. An
  // untrusted store misses every get, stores nothing and lists, verifies and prunes nothing.
  KJIT_TOOLS_API system::Result<void> trusted() const;

  const StoreConfig& config() const { return m_config; }
  std::filesystem::path entry_path(const Key& key) const;
  std::string entry_file(const Key& key) const;  // entry_path() as a string
  std::filesystem::path lock_path(const Key& key) const;

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
  // entries evicted. Without the usage lock within k_background_lock_wait (held too long) the
  // total drifts until a recount.
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

  // Maintenance (list, verify, prune, clear, the recount) never follows a symbolic link inside
  // the directory: a shard folder, entry, temporary, locks folder or lock file that is one is
  // reported in `skipped` and left alone; files are opened and removed relative to their shard
  // folder, itself opened with O_NOFOLLOW, so a shard replaced by a link meanwhile is not followed
  // either. The directory itself (config().dir) may be a link.
  //
  // Every entry (scans the directory).
  std::vector<EntryInfo> list() const;
  // list(), and the symbolic links it left alone where shards and entries go.
  KJIT_TOOLS_API ListResult list_with_skipped() const;
  // Reads and checks every entry; damaged ones are REMOVED and listed (those that could not be
  // removed, a read-only cache, also in not_removed). Recounts usage.
  KJIT_TOOLS_API VerifyResult verify();
  // Removes entries last used before now - older_than, then least recently used ones until at
  // most max_size bytes remain (0: no size bound); also stale temporaries (older than
  // k_stale_temp_age) and lock files no one holds. Recounts usage.
  KJIT_TOOLS_API PruneResult prune(std::uint64_t max_size,
                    std::optional<std::chrono::seconds> older_than = std::nullopt);
  // Removes every entry, temporary and unheld lock file. Keeps the persistent stats.
  KJIT_TOOLS_API PruneResult clear();

  // Entries and bytes from the usage counter (no scan; recounts only if the counter is
  // missing or unreadable).
  KJIT_TOOLS_API Usage usage();

  // A note of kjit's own at the top of the folder, `name` (no '/'; not an entry, shard, `locks`,
  // `usage` or `stats`): a bundle import's journal (core/cache/bundle). Read only as a regular file
  // that passes the folder's trust check, never through a link (nullopt: there is none); replaced
  // whole through AtomicFile::create_at; removed. Maintenance leaves notes alone (store_notes.cpp).
  system::Result<std::optional<std::string>> read_note(const std::string& name) const;
  system::Result<void> write_note(const std::string& name, std::string_view bytes);
  system::Result<void> remove_note(const std::string& name);

  // Adds this object's counters not yet flushed to the persistent stats of the directory.
  // Cheap enough to call after each compile; a Failure when they cannot be written.
  KJIT_TOOLS_API system::Result<void> flush_stats(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // Totals of every process that flushed into this directory.
  KJIT_TOOLS_API StatsSnapshot read_persistent_stats() const;
  system::Result<void> reset_persistent_stats();

  // Automatic eviction brings the store down to this fraction of max_size (in percent).
  static constexpr std::uint64_t k_evict_to_percent = 90;
  // A hit rewrites an entry's last use only when the recorded one is older than this, as
  // relatime does for atime: most hits then cost no write, and LRU order is exact to within it.
  static constexpr std::chrono::seconds k_last_use_resolution{60};
  // The longest a background job (account(), a flush) waits for a lock: the worker's heartbeats
  // wait behind it, and must stay well within a waiter's lock_stale_after (10 s by default).
  static constexpr std::chrono::seconds k_background_lock_wait{2};
  // Temporaries older than this belong to killed writers.
  static constexpr std::chrono::minutes k_stale_temp_age{5};

  // The counters this Store counts into (StoreConfig::stats, else its own): the storage's events
  // only (damaged, evictions, bytes_read, bytes_written, store_failures). A lookup is no request:
  // hits, misses, compiles and waits are counted by the request's owner (the compile service).
  const Stats& stats() const { return m_stats; }
  Stats& stats() { return m_stats; }

private:
  // How long a put, verify, prune or recount waits for the usage lock: a scan of 100k entries
  // takes ~1 s.
  static constexpr std::chrono::seconds k_usage_lock_timeout{10};
  enum class Scope { prune, clear };
  PruneResult shrink(std::uint64_t max_size, std::optional<std::chrono::seconds> older_than, Scope scope);
  GetResult read_entry(const Key& key, bool in_place, bool touch = true);
  std::uint64_t count_put(UsageCounter::Locked& counter, std::span<const UsageChange> changes);  // evicted entries
  // 0 when the damaged file is gone (or was replaced meanwhile), else the unlink's errno.
  int remove_damaged(int shard_fd, const std::string& name, std::uint64_t size, dev_t dev, ino_t ino);
  void ensure_cachedir_tag(const TrustedDir& dir);
  std::string sub(std::string_view name) const;  // <dir>/<name>
  // The checked folder, held open: null when refused, or not made yet (create_when_writing).
  // Set once, never replaced: a lock-free read.
  const TrustedDir* dir() const { return m_dir.load(std::memory_order_acquire); }
  // dir() for a write: the folder made and checked first where that was deferred; else why not.
  system::Result<const TrustedDir*> writable_dir();
  // Why the folder is refused (nullopt: it is in use, or not made yet).
  std::optional<system::Failure> refusal() const;
  system::Result<const TrustedDir*> open_folder_now();  // under m_open_mutex (or in the constructor)

  StoreConfig m_config;
  mutable std::mutex m_open_mutex;
  std::optional<system::Failure> m_refused;             // why the folder is not trusted (m_open_mutex)
  std::shared_ptr<const TrustedDir> m_dir_owner;        // what dir() points to
  std::unique_ptr<UsageCounter> m_usage;                // set with the folder, before dir() shows it
  std::atomic<const TrustedDir*> m_dir{nullptr};
  Stats m_own_stats;
  Stats& m_stats;
  std::atomic<bool> m_tag_checked{false};
  std::mutex m_flush_mutex;
  StatsSnapshot m_flushed;  // what flush_stats already added, under m_flush_mutex
  // fork(): a child's flush adds only what it counted itself (its parent adds the rest).
  system::AtFork::Registration m_fork;
};

}  // namespace kjit::cache
