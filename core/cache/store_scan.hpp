// The scan of a store folder, for its maintenance and eviction (cache/store_maintenance.cpp, store.cpp):
// the names of its files, one pass that lists entries and temporaries without following a link,
// unlinking relative to shard folders opened with O_NOFOLLOW, the removal of lock files no one
// holds, and the one LRU policy. Internal to the store; never throws.
#pragma once

#include "core/cache/key.hpp"
#include "core/cache/store_folder.hpp"
#include "core/cache/store_maintenance.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::cache {

// The "shard" of a temporary in the cache folder itself (the stats file's, CACHEDIR.TAG's).
inline constexpr unsigned k_top_folder = 256;

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

// The file name of a scanned entry or temporary (the tail of its path).
inline const char* name_of(const ScannedEntry& e) { return e.path.c_str() + e.path.rfind('/') + 1; }

// The shard folder of scanned files, opened with O_NOFOLLOW: maintenance opens and unlinks files
// relative to it, so a shard folder replaced by a symbolic link after the scan is not followed
// either. Keeps the last shard open: callers go shard by shard.
class ShardFolder {
public:
  explicit ShardFolder(int top_fd) : m_top_fd(top_fd) {}
  ShardFolder(const ShardFolder&) = delete;
  ShardFolder& operator=(const ShardFolder&) = delete;
  ~ShardFolder();

  // The open folder of `e`, or -1 with errno set (gone, or no longer a folder: a link).
  int fd(const ScannedEntry& e);

private:
  int m_top_fd;
  int m_fd = -1;
  int m_errno = 0;
  unsigned m_shard = k_top_folder + 1;  // none
};

// Unlinks a scanned file without following a link on the way: 0 when it is gone, else the errno
// of the failure (EROFS: a read-only cache).
int unlink_scanned(ShardFolder& folder, const ScannedEntry& e);

// One pass over <dir>/<2 hex>/ (and, `with_temps`, the temporaries of <dir> itself): readdir and
// one fstatat per file, nothing else. Never follows a symbolic link: a shard folder, entry or
// temporary that is one is listed in `skipped` instead. Nothing for a null (untrusted) dir.
Scan scan_dir(const TrustedDir* dir, bool with_temps);

// Removes lock files that no one holds (left by killed processes); held ones stay. A locks
// folder or lock file that is a symbolic link is not followed: listed in `skipped`.
void remove_unheld_locks(const TrustedDir& top, std::vector<Skipped>& skipped);

struct Eviction {
  std::uint64_t removed_entries = 0, removed_bytes = 0, kept_entries = 0, kept_bytes = 0;
  std::vector<NotRemoved> not_removed;
};

// The one LRU policy of the store (automatic eviction and prune alike): sorts the scanned
// entries least recently used first and removes them while `must_go(entry, bytes_still_kept)`
// says so, never the entry at `spare`. Entries that could not be unlinked count as kept.
using MustGo = std::function<bool(const ScannedEntry&, std::uint64_t)>;
Eviction evict_oldest(int top_fd, Scan& scan, const std::string& spare, const MustGo& must_go);

// The key a scanned entry's path names: .../<2 hex>/<30 hex>.kjit.
std::optional<Key> key_of_path(const std::string& path);

}  // namespace kjit::cache
