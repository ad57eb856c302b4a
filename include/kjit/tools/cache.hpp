// kjit::Cache: administration of a cache directory, what `kjit cache` does: counters summed
// over every process, usage, listing, verification, pruning and clearing. Host programs use it
// to warm, inspect or trim a cache. Throws UsageError for a malformed size or duration.
#pragma once

#include <kjit/export.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kjit {

struct CacheStats {
  std::filesystem::path dir;
  std::uint64_t entries = 0, bytes = 0, max_size = 0;
  // Summed over every process that used the directory. The cache's counter list, field for
  // field by name (kjit copies them by that list: a counter added there must be added here).
  std::uint64_t hits = 0, misses = 0, compiles = 0, waits = 0, damaged = 0, evictions = 0, bytes_written = 0,
                bytes_read = 0, store_failures = 0;
  // The remote tier (KJIT_REMOTE_CACHE): GETs made on the request path and their summed latency
  // (microseconds), their hits and misses (rejected: a value present but damaged, foreign or
  // unsigned, never loaded), failed calls (timeouts among them), writes made and dropped (queue
  // full, value too large, remote skipped), and bytes each way; of them, the hits an HTTP level
  // answered, the HTTP levels' failed calls, and the writes that backfilled a faster level.
  std::uint64_t remote_requests = 0, remote_hits = 0, remote_misses = 0, remote_rejected = 0, remote_errors = 0,
                remote_timeouts = 0, remote_writes = 0, remote_dropped = 0, remote_bytes_read = 0,
                remote_bytes_written = 0, remote_latency_us = 0, remote_http_hits = 0, remote_http_errors = 0,
                remote_backfills = 0;
  // Reads not made because the key's shard was down (skipped in its back-off): misses.
  std::uint64_t remote_shard_down = 0;
};

struct CacheEntryInfo {
  std::string key;  // 32 hex digits
  std::filesystem::path path;
  std::uint64_t size = 0;
  std::chrono::system_clock::time_point last_use;
  // From the entry itself: the program (a tuner's name for a decision), the arch ("sm_90"; empty
  // for a decision) and the kinds it holds ("cubin", "ptx", "ltoir", "tuning"). All empty when
  // the entry could not be read or checked (`kjit cache verify` says why).
  std::string program;
  std::string arch;
  std::vector<std::string> kinds;
};

struct CacheListResult {
  std::vector<CacheEntryInfo> entries;
  // Symbolic links inside the cache, left alone and not followed: path, why.
  std::vector<std::pair<std::filesystem::path, std::string>> skipped;
};

// A kjit::Tuner decision kept in the cache (`kjit cache ls --tuning`).
struct CacheTuningInfo {
  std::string key;  // the decision's key, 32 hex digits
  std::filesystem::path path;
  std::chrono::system_clock::time_point last_use;
  std::string device;
  std::string tuning_key;
  std::string name;  // the tuner's ("scale.cu: scale"); empty for decisions of earlier kjit versions
  std::size_t chosen = 0;
  std::vector<std::string> labels;
  std::vector<double> median_us;  // < 0: not timed to the end
  // With KJIT_TUNE_METRICS=sol when it was decided: why the winner won, from the speed-of-light
  // figures of it and the fastest measured runner-up ("DRAM 91.0% vs 64.2%, ... (vs block 128)").
  std::string why;
};

struct CachePruneResult {
  std::uint64_t removed_entries = 0, removed_bytes = 0, kept_entries = 0, kept_bytes = 0;
  // Symbolic links inside the cache, left alone and not followed: path, why.
  std::vector<std::pair<std::filesystem::path, std::string>> skipped;
  // Entries that should have gone and could not be removed (kept): path, why ("Read-only file system").
  std::vector<std::pair<std::filesystem::path, std::string>> not_removed;
};

struct CacheVerifyResult {
  std::uint64_t ok = 0;
  std::vector<std::pair<std::filesystem::path, std::string>> damaged;  // removed: path, why
  std::vector<std::pair<std::filesystem::path, std::string>> skipped;  // links, left alone: path, why
  // Damaged entries that could not be removed (a read-only cache): path, why.
  std::vector<std::pair<std::filesystem::path, std::string>> not_removed;
};

class KJIT_API Cache {
public:
  // `dir` empty: the default cache dir (KJIT_CACHE_DIR, XDG_CACHE_HOME, ~/.cache/kjit).
  // `shared`: a team cache (KJIT_CACHE_SHARED). The folder is checked as a Runtime checks it;
  // one that cannot be used (it cannot be made, another user's, writable by others) makes every
  // call below throw UnavailableError saying which folder is not in use and why.
  explicit Cache(std::filesystem::path dir = {}, std::uint64_t max_size = 2ull << 30, bool shared = false);
  ~Cache();
  Cache(Cache&&) noexcept;
  Cache& operator=(Cache&&) noexcept;

  std::filesystem::path dir() const;
  CacheStats stats();
  std::vector<CacheEntryInfo> list() const;
  // list(), and the symbolic links it left alone (maintenance never follows a link in the cache).
  CacheListResult list_with_skipped() const;
  // The tuner's decisions among the entries (each read and checked), most recently used first.
  std::vector<CacheTuningInfo> tuning_decisions() const;
  // Reads and checks every entry; damaged ones are removed and listed.
  CacheVerifyResult verify();
  // Removes entries unused for `older_than`, then the least recently used until at most
  // `max_size` bytes remain (nullopt: the configured budget).
  CachePruneResult prune(std::optional<std::uint64_t> max_size,
                         std::optional<std::chrono::seconds> older_than = std::nullopt);
  CachePruneResult clear();

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

// One round trip to each server of a remote cache (`kjit cache remote ping`; `url` as
// KJIT_REMOTE_CACHE: a comma list of Redis shards, then HTTP levels): whether every server
// answered, what each says of itself ("redis 7.0.15; http 404 nginx/1.22.1") and how long it all
// took, or why not (`message`); and each server on its own (`servers`, in the tier's order: the
// shards, then the HTTP levels), with whether a shard would refuse writes now (a Redis at
// maxmemory under noeviction, a read-only replica: it still serves reads). An HTTP level is asked
// with the credentials in `http_auth_file` (KJIT_REMOTE_HTTP_AUTH_FILE). Throws UsageError for an
// address or credentials file it cannot use.
struct RemoteServerPing {
  std::string url;  // with its password redacted (redact_remote_url)
  bool shard = true;  // a Redis shard of the first level; false: an HTTP level
  double weight = 1;  // a shard's
  bool ok = false;
  std::string server;
  std::chrono::microseconds round_trip{0};
  std::string refusing_writes;  // why, when it would; empty otherwise
  std::string message;
};
struct RemotePing {
  std::string url;  // the whole list, its passwords redacted
  bool ok = false;  // every server answered
  std::string server;  // what each server that answered says, joined by "; "
  std::chrono::microseconds round_trip{0};  // all of them
  std::string message;  // why each that did not answer, joined by "; "
  std::vector<RemoteServerPing> servers;
};
KJIT_API RemotePing ping_remote_cache(const std::string& url, std::chrono::milliseconds timeout,
                                      const std::filesystem::path& http_auth_file = {});
// A remote cache's address as kjit prints it everywhere: "redis://:***@host:6379" (the password
// replaced; the rest kept).
KJIT_API std::string redact_remote_url(std::string_view url);

// "2G", "512M", "1.5GiB", "1048576": bytes. Throws UsageError naming `what` otherwise.
KJIT_API std::uint64_t parse_size(std::string_view text, std::string_view what);
// "30s", "10m", "2h", "7d", "2w". Throws UsageError naming `what` otherwise.
KJIT_API std::chrono::seconds parse_duration(std::string_view text, std::string_view what);

}  // namespace kjit
