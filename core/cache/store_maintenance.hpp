// kjit::cache::StoreMaintenance: the administration of a store folder (cache/store_folder.hpp):
// list its entries, verify them (removing the damaged), prune by age and byte budget, clear, and
// the usage total read or recounted, each over one scan of the folder (cache/store_scan). The
// request path (cache::Store) runs beside it on the same folder: maintenance takes the usage lock
// where it counts, and only ever removes whole files. Never follows a symbolic link inside the
// folder: a shard folder, entry, temporary, locks folder or lock file that is one is reported in
// `skipped` and left alone; files are opened and removed relative to their shard folder, itself
// opened with O_NOFOLLOW, so a shard replaced by a link meanwhile is not followed either. The
// folder itself (config().dir) may be a link. Never throws for I/O trouble. Knows nothing of CUDA.
#pragma once

#include "core/system/tools_api.hpp"
#include "core/cache/key.hpp"
#include "core/cache/store_folder.hpp"
#include "core/cache/usage_counter.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kjit::cache {

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

class StoreMaintenance {
public:
  explicit StoreMaintenance(std::shared_ptr<StoreFolder> folder) : m_folder(std::move(folder)) {}

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
  KJIT_TOOLS_API PruneResult prune(std::uint64_t max_size, std::optional<std::chrono::seconds> older_than = std::nullopt);
  // Removes every entry, temporary and unheld lock file. Keeps the persistent stats.
  KJIT_TOOLS_API PruneResult clear();
  // Entries and bytes from the usage counter (no scan; recounts only if the counter is
  // missing or unreadable).
  KJIT_TOOLS_API Usage usage();

  // Temporaries older than this belong to killed writers.
  static constexpr std::chrono::minutes k_stale_temp_age{5};

private:
  enum class Scope { prune, clear };
  PruneResult shrink(std::uint64_t max_size, std::optional<std::chrono::seconds> older_than, Scope scope);

  std::shared_ptr<StoreFolder> m_folder;
};

}  // namespace kjit::cache
