// kjit::request::Storage: the cache tiers behind one front (ccache's storage::Storage): the local
// disk store, then the remote tier (a fleet's Redis shards, then its HTTP levels), and the policies
// over them: KJIT_ALWAYS_COMPILE asks no tier, KJIT_REQUIRE_HIT gets why each tier missed (as data,
// in the lookup's answer), a remote hit is backfilled to the disk by the worker, a key being filled
// is locked across processes (the store's flock, with a heartbeat) and nodes (the remote lock), and
// a fresh entry is published on the disk before fill() returns (a link's: by the worker, Fill),
// sent to the remote off the request path. CompileService asks it once a request (find) and, on a miss, once more (fill); it knows no
// tier itself. It owns the disk store (none when the cache is disabled or its folder is not
// trusted: cache/dir_trust.hpp) and the remote tier; the worker is the service's.
// The constructor throws UsageError for a remote address or secret it cannot use, UnavailableError
// for a cache folder it cannot use where config.cache_required asks for one; fill() throws what
// `make` throws.
#pragma once

#include <kjit/compile_result.hpp>
#include <kjit/error.hpp>
#include <kjit/log.hpp>
#include <kjit/program.hpp>
#include <kjit/runtime_config.hpp>

#include "core/cache/key.hpp"
#include "core/cache/remote/remote_tier.hpp"
#include "core/cache/store.hpp"
#include "core/cache/store_notes.hpp"
#include "core/cache/store_stats.hpp"
#include "core/compile/options/option_marshalling.hpp"
#include "core/request/cache_key.hpp"
#include "core/request/counters.hpp"
#include "core/system/background.hpp"

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kjit::request {

// A request's NVRTC flags and cache key for one arch.
struct PreparedRequest {
  std::vector<std::string> flags;
  CacheKey key;

  // `fast`: the fast path's setting (RuntimeConfig::nvrtc_fast), part of the key.
  static PreparedRequest make(const Program& program, const compile::NormalizedOptions& options, const Arch& arch,
                              compile::FastPath fast);
};

class Storage {
public:
  using Log = std::function<void(LogLevel, std::string_view)>;  // already filtered by level
  // Makes the entry's result on a miss (NVRTC, or a link's nvJitLink run): ptx/cubin/log/lowered
  // names; it clears `keep` for a result its key does not describe (not stored).
  using Make = std::function<CompileResult(bool& keep)>;

  Storage(const RuntimeConfig& config, Counters& counters, Log log, system::Background& background);
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  // One lookup through the tiers, in order. A hit's result has outcome hit or remote_hit; a miss
  // says, where config.require_hit asks for it, why each tier missed ({"disk", ...}, {"remote", ...}).
  struct Found {
    std::optional<CompileResult> result;
    std::vector<CacheMissError::Tier> missed;
  };
  Found find(const Program& program, const Arch& arch, const PreparedRequest& request);

  // How a miss is filled. once: under the per-key locks across processes (the store's flock, with
  // a heartbeat) and nodes (the remote lock), so that NVRTC's tens of milliseconds are spent once,
  // and the entry published on the disk before fill() returns (the next process needs it).
  // unlocked: make() at once, without either lock, and the entry written by the worker (a link:
  // nvJitLink's fraction of a millisecond costs less than a lock file's creation and removal, a
  // remote round trip or the entry's file on the request path). Until the worker wrote it, this
  // process finds it in memory (a disk hit); a process that asks meanwhile, or after this one ended
  // before its worker could, links again; two that link one key at once publish the same entry.
  enum class Fill { once, unlocked };

  // After a miss: the key locked across processes and nodes (Fill::once); the entry another holder
  // made meanwhile (outcome waited), else make()'s result (outcome compiled), published on the disk
  // and sent to the remote. Counts the request's miss, wait or compile.
  CompileResult fill(const Program& program, const Arch& arch, const PreparedRequest& request, const Make& make,
                     Fill how = Fill::once);

  // Entries that are not compile results (EntryStore): the disk, then the remote (backfilled).
  std::optional<std::string> find_entry(const cache::Key& key);
  void store_entry(const cache::Key& key, const std::string& bytes);

  const std::string& cache_dir() const { return m_cache_dir; }
  // The disk store's notes (where NVRTC's answers are kept: base::nvrtc_facts); null without a store.
  cache::StoreNotes* notes() const { return m_notes.get(); }
  // Where an entry lives, for the -v line: its file, or "not kept (no cache)".
  std::string entry_place(const cache::Key& key) const;

  // Writes the store's counters into the cache directory's persistent stats (on this thread).
  void flush();
  // The remote's last writes counted (it closes), then the counters flushed: after the worker finished.
  void close();
  // A forked child: the flush queued was the parent's worker's.
  void forget_queued_flush() { m_flush_queued = false; }
  // fork(): the table of entries the worker has yet to write, held across the fork (lock, unlock),
  // and empty in a child (the parent's worker writes them).
  void lock_pending() { m_pending_mutex.lock(); }
  void unlock_pending() { m_pending_mutex.unlock(); }
  void forget_pending_in_child();

private:
  CompileResult from_remote(cache::RemoteGet&& value, const Program& program, const Arch& arch,
                            const PreparedRequest& request);
  CompileResult across_nodes(const Program& program, const Arch& arch, const PreparedRequest& request,
                             const Make& make);
  enum class Write { now, by_worker };
  CompileResult make_and_store(const PreparedRequest& request, const Make& make, std::string remote_token = {},
                               Write write = Write::now);
  // An entry for the worker to write (Write::by_worker), found by find() in memory until it is.
  void put_later(const cache::Key& key, const CompileResult& result, std::string bytes);
  std::optional<CompileResult> pending(const cache::Key& key);
  void note_put(const cache::PutResult& p);
  void put_own(const cache::Key& key, std::string_view bytes);
  void backfill(const cache::Key& key, std::string bytes);
  void schedule_flush();

  const RuntimeConfig& m_config;
  Counters& m_counters;
  Log m_log;
  system::Background& m_background;
  std::atomic<bool> m_flush_queued{false};
  std::string m_cache_dir;                // a string: the hit path touches no std::filesystem
  std::unique_ptr<cache::Store> m_store;  // null when the cache is disabled (or its folder refused)
  std::unique_ptr<cache::StoreStats> m_stats;  // its folder's persistent stats: null with m_store
  std::unique_ptr<cache::StoreNotes> m_notes;  // its folder's notes (NVRTC's kept answers): null with m_store
  std::atomic<bool> m_warned_store{false};
  std::unique_ptr<cache::RemoteTier> m_remote;  // null without KJIT_REMOTE_CACHE
  // put_later's entries until the worker wrote them (or dropped them); m_pending_count: their
  // number, read first so that a lookup with none pending takes no lock.
  std::mutex m_pending_mutex;
  std::unordered_map<cache::Key, CompileResult, cache::KeyHash> m_pending;
  std::atomic<std::size_t> m_pending_count{0};
};

}  // namespace kjit::request
