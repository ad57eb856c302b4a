// kjit::cache::Store: the on-disk, content-addressed store. One file per entry at
// <dir>/<2 hex>/<30 hex>.kjit, published atomically (unique temporary + rename), checked on
// every read, evicted least-recently-used by a byte budget. It never throws for I/O trouble:
// results say hit / miss / damaged / error, and the caller decides. Knows nothing of CUDA.
#pragma once

#include "cache/entry.hpp"
#include "cache/file_lock.hpp"
#include "cache/key.hpp"
#include "cache/stats.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kjit::cache {

struct StoreConfig {
  std::filesystem::path dir;
  std::uint64_t max_size = 2ull << 30;  // bytes; 0 = unlimited
};

struct GetResult {
  enum class Outcome { hit, miss, damaged, error } outcome = Outcome::miss;
  std::optional<Entry> entry;  // set on hit
  std::string message;         // for damaged and error: what went wrong, on which file
};

struct PutResult {
  bool stored = false;
  std::string message;  // why not, when !stored ("writing /x/ab/cd.kjit: No space left on device")
  std::uint64_t evicted_entries = 0;
};

struct EntryInfo {
  Key key;
  std::filesystem::path path;
  std::uint64_t size = 0;
  std::chrono::system_clock::time_point last_use;
};

struct PruneResult {
  std::uint64_t removed_entries = 0;
  std::uint64_t removed_bytes = 0;
  std::uint64_t kept_entries = 0;
  std::uint64_t kept_bytes = 0;
};

struct VerifyResult {
  std::uint64_t ok = 0;
  std::vector<std::pair<std::filesystem::path, std::string>> damaged;  // path, why
};

class Store {
public:
  explicit Store(StoreConfig config);

  const StoreConfig& config() const { return m_config; }
  std::filesystem::path entry_path(const Key& key) const;

  // Reads and checks the entry; a damaged one is removed and reported as damaged (the caller
  // treats it as a miss). On a hit, records the last use (not through atime).
  GetResult get(const Key& key);
  // Publishes atomically; when the store goes over max_size, evicts least recently used.
  // Leaves no partial file behind on any failure.
  PutResult put(const Key& key, const Entry& entry);

  // The per-key cross-process lock (flock on <dir>/locks/...): released by the OS when the
  // holder dies. Waits at most `timeout`, calling `progress(waited_so_far)` about every
  // `progress_every` while it waits; nullopt when the bound passed or locking is impossible
  // (read-only directory): the caller then compiles by itself.
  std::optional<FileLock> lock(const Key& key, std::chrono::milliseconds timeout,
                               const std::function<void(std::chrono::milliseconds)>& progress = {},
                               std::chrono::milliseconds progress_every = std::chrono::seconds(5));

  std::vector<EntryInfo> list() const;
  VerifyResult verify();
  PruneResult prune(std::uint64_t max_size,
                    std::optional<std::chrono::seconds> older_than = std::nullopt);
  PruneResult clear();

  // Counters of this Store object (this process).
  const Stats& stats() const { return m_stats; }
  Stats& stats() { return m_stats; }

private:
  StoreConfig m_config;
  Stats m_stats;
};

}  // namespace kjit::cache
