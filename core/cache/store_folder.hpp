// kjit::cache::StoreFolder: one cache folder, opened and checked once (cache/dir_trust, the one place
// trust is decided), that the store's four parts share: the request path (cache::Store), its
// maintenance (StoreMaintenance), its notes (StoreNotes) and its persistent stats (StoreStats). It
// holds the folder's descriptor, its usage counter and the counters its parts count into, and names
// its paths. A refused folder is never read or written: trusted() says why. Never throws past
// allocation failures. Knows nothing of CUDA.
//
// Layout of a cache folder:
//   CACHEDIR.TAG            written on the first put
//   <2 hex>/<30 hex>.kjit   entries; mtime = last use (Store::k_last_use_resolution), never atime
//   <2 hex>/.tmp.*          temporaries being written (stale ones are removed by prune/clear)
//   locks/<32 hex>.lock     per-key flock files, removed by their holder on release
//   usage                   running total of entries and bytes (UsageCounter)
//   stats                   counters of every process (PersistentStats, replaced whole)
//   .tmp.*                  the temporaries of stats, notes and CACHEDIR.TAG (removed as the shards' are)
//   import                  a note: the journal of a bundle import in progress (core/cache/bundle.hpp)
// Thread-safe: one folder may serve many threads and parts.
#pragma once

#include "core/system/tools_api.hpp"
#include "core/system/at_fork.hpp"
#include "core/cache/dir_trust.hpp"
#include "core/cache/key.hpp"
#include "core/system/result.hpp"
#include "core/cache/stats.hpp"
#include "core/cache/usage_counter.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace kjit::cache {

// An entry's file name: <30 hex>.kjit (in the shard folder of its first 2 hex).
inline constexpr std::string_view k_entry_suffix = ".kjit";
inline constexpr std::size_t k_entry_name_size = 30 + k_entry_suffix.size();

struct StoreConfig {
  std::string dir;  // a string, not a path: a hit touches no std::filesystem (see Store::get())
  std::uint64_t max_size = 2ull << 30;  // bytes; 0 = unlimited
  DirSharing sharing = DirSharing::private_to_user;  // group: a team cache (KJIT_CACHE_SHARED)
  Stats* stats = nullptr;  // the table the parts count into (a Runtime's one list); null: the folder's own
  // A folder that does not exist yet, in a parent this user may write into, is made (and checked)
  // by the first write instead of by the constructor: a process whose requests the remote tier
  // answers makes it on the worker, off the request's path. Reads of it meanwhile are misses. A
  // folder that exists, or one that cannot be made by a write, is opened and checked at once.
  bool create_when_writing = false;
};

class StoreFolder {
public:
  // Opens (creating it when missing) and checks the folder, or defers that to the first write
  // (StoreConfig::create_when_writing).
  KJIT_TOOLS_API explicit StoreFolder(StoreConfig config);
  StoreFolder(const StoreFolder&) = delete;
  StoreFolder& operator=(const StoreFolder&) = delete;

  // Whether the folder passed the trust check; the Failure says why not and how to fix it. The
  // parts of an untrusted folder miss every get, store nothing and list, verify and prune nothing.
  KJIT_TOOLS_API system::Result<void> trusted() const;
  const StoreConfig& config() const { return m_config; }

  std::string path(std::string_view name) const;  // <dir>/<name>
  std::string entry_file(const Key& key) const;   // <dir>/<2 hex>/<30 hex>.kjit
  std::filesystem::path entry_path(const Key& key) const { return entry_file(key); }
  std::filesystem::path lock_path(const Key& key) const;

  // The checked folder, held open: null when refused, or not made yet (create_when_writing).
  // Set once, never replaced: a lock-free read.
  const TrustedDir* dir() const { return m_dir.load(std::memory_order_acquire); }
  // dir() for a write: the folder made and checked first where that was deferred; else why not.
  system::Result<const TrustedDir*> writable_dir();
  // Why the folder is refused (nullopt: it is in use, or not made yet).
  std::optional<system::Failure> refusal() const;
  // The folder's running total of entries and bytes: set with dir(), null while it is.
  UsageCounter* usage_counter() const { return dir() != nullptr ? m_usage.get() : nullptr; }

  // The counters the parts count into (StoreConfig::stats, else the folder's own): the storage's
  // events only (damaged, evictions, bytes_read, bytes_written, store_failures). A lookup is no
  // request: hits, misses, compiles and waits are counted by the request's owner.
  const Stats& stats() const { return m_stats; }
  Stats& stats() { return m_stats; }

  // How long a put, verify, prune or recount waits for the usage lock: a scan of 100k entries
  // takes ~1 s.
  static constexpr std::chrono::seconds k_usage_lock_timeout{10};
  // The longest a background job (Store::account(), a flush) waits for a lock: the worker's
  // heartbeats wait behind it, and must stay well within a waiter's lock_stale_after (10 s by default).
  static constexpr std::chrono::seconds k_background_lock_wait{2};

private:
  system::Result<const TrustedDir*> open_folder_now();  // under m_open_mutex (or in the constructor)

  StoreConfig m_config;
  mutable std::mutex m_open_mutex;
  std::optional<system::Failure> m_refused;       // why the folder is not trusted (m_open_mutex)
  std::shared_ptr<const TrustedDir> m_dir_owner;  // what dir() points to
  std::unique_ptr<UsageCounter> m_usage;          // set with the folder, before dir() shows it
  std::atomic<const TrustedDir*> m_dir{nullptr};
  Stats m_own_stats;
  Stats& m_stats;
  system::AtFork::Registration m_fork;  // a child gets a fresh m_open_mutex
};

}  // namespace kjit::cache
