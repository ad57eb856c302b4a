// kjit::RuntimeConfig: how a Runtime caches, waits, logs and reaches a fleet's cache, from the
// KJIT_* environment variables or set in code (the code wins); kjit::RuntimeStats: one Runtime's
// counters.
#pragma once

#include <kjit/export.hpp>

#include <kjit/log.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace kjit {

// Whether a cache folder that cannot be used (it cannot be made, it is another user's, others may
// write into it) stops a Runtime. never: one warning, and kernels are compiled in memory, not kept.
// when_named: as always when the folder was named (RuntimeConfig::cache_dir, or KJIT_CACHE_DIR set),
// as never for the default folder (kjit's CLI: --cache-dir or KJIT_CACHE_DIR). always: the Runtime's
// constructor throws UnavailableError saying which folder, why and how to fix it. A folder in use
// that refuses a write (a read-only cache, a full disk) is a warning in every case.
enum class CacheRequired { never, when_named, always };

struct KJIT_API RuntimeConfig {
  std::filesystem::path cache_dir;              // empty: KJIT_CACHE_DIR, else the default cache dir
  CacheRequired cache_required = CacheRequired::never;
  std::uint64_t cache_max_size = 2ull << 30;    // bytes; 0: unlimited
  bool cache_disabled = false;                  // no reads, no writes
  bool always_compile = false;                  // compile, then write
  // Waiting for another process that compiles the same key: at most lock_timeout in all
  // (KJIT_LOCK_TIMEOUT), and no longer than lock_stale_after once the holder shows no progress
  // (KJIT_LOCK_STALE_AFTER; a holder proves progress every second while it compiles). Then this
  // process compiles by itself; both results are written by atomic rename, so they cannot collide.
  std::chrono::milliseconds lock_timeout{std::chrono::minutes(5)};
  std::chrono::milliseconds lock_stale_after{std::chrono::seconds(10)};
  std::chrono::milliseconds wait_progress_every{std::chrono::seconds(5)};  // log while waiting
  std::filesystem::path dump_dir;               // KJIT_DUMP_DIR: dump every compile here
  bool dump_hits = false;                       // also dump cache hits
  // NVRTC precompiled headers (--pch) in a folder private to this Runtime, removed with it:
  // later compiles that include the same heavy headers (<cub/...>, <cuda/std/...>) reuse them.
  // Never part of the cache key (the output is the same). `kjit warm` turns it on.
  bool precompiled_headers = false;
  // KJIT_NVRTC_FAST: NVRTC's minimal front end (--minimal) for a program that needs none of what
  // it leaves out (textures, surfaces, the device runtime, the runtime and driver APIs' names),
  // with a fallback to the full one: about a third off a small kernel's cold compile. Never part
  // of the cache key (the PTX and cubin are the same); off: always the full front end.
  bool nvrtc_fast = true;
  // KJIT_PREPARE: the Runtime, when it is made, makes NVRTC ready on a thread of its own
  // (kjit::prepare(), <kjit/runtime.hpp>), so that its first compile does not open NVRTC. No
  // output changes; off: NVRTC is opened by the first request that needs it.
  bool prepare = true;
  LogLevel log_level = LogLevel::warn;
  LogCallback log;                              // empty: stderr

  // The cache directory must be this user's and writable by no one else (it holds executable
  // code); otherwise it is not used (one warning; kernels are compiled in memory). A team cache
  // opts in (KJIT_CACHE_SHARED=1): the group may write; the folder must still be this user's or
  // root's, with one of this user's groups, never world-writable, and what is read from it must
  // carry that group (or be this user's). kjit makes it all 2770/0660; never the temp fallback.
  bool cache_shared = false;
  // A fleet's shared cache behind the local disk (KJIT_REMOTE_CACHE): redis://host[:port][/db]
  // or unix:///path/to/redis.sock, or a comma list of such shards with weights
  // ("redis://a,redis://b(2)": each key lives on one, by weighted rendezvous hashing;
  // docs/fleet.md), then http[s]://host[:port][/path] levels, comma-separated, asked in that
  // order; empty: none. A remote hit is written to the local disk (and a slower level's to the
  // faster ones); a compile is sent to every level in the background (to the key's shard);
  // nodes that miss together compile once (the lock on the key's shard). Trouble with the remote
  // never fails a request: a shard or level is skipped for a while (one warning), its keys miss.
  std::string remote_cache;
  bool remote_read_only = false;                        // KJIT_REMOTE_READONLY: read, never write
  std::filesystem::path remote_secret_file;             // KJIT_REMOTE_SECRET_FILE: sign, load only signed
  // ed25519 instead of the secret (docs/bundles.md): CI signs with its key, nodes hold public keys
  // (one a line), load only what those sign and never write to the fleet cache.
  std::filesystem::path remote_signing_key_file;        // KJIT_REMOTE_SIGNING_KEY_FILE
  std::filesystem::path remote_public_key_file;         // KJIT_REMOTE_PUBLIC_KEY_FILE
  std::filesystem::path remote_http_auth_file;          // KJIT_REMOTE_HTTP_AUTH_FILE: HTTP levels' credentials
  std::chrono::milliseconds remote_timeout{50};         // KJIT_REMOTE_TIMEOUT: connect, and each reply
  std::chrono::seconds remote_ttl{0};                   // KJIT_REMOTE_TTL: values expire; 0: never
  std::uint64_t remote_max_value_size = 64ull << 20;    // KJIT_REMOTE_MAX_VALUE: larger ones are not sent
  // KJIT_REQUIRE_HIT: a request that misses every tier (disk, remote)
  // throws CacheMissError (naming the program, the key, each tier asked and why it missed)
  // instead of compiling: for images and nodes that were seeded and must not compile.
  bool require_hit = false;

  // Defaults overridden by the KJIT_* environment variables. Throws UsageError for a value
  // it cannot parse (KJIT_CACHE_MAX_SIZE=lots).
  static RuntimeConfig from_environment();
  // The fields above by name, set from text as their KJIT_* variable is read ("2G", "30s", "on",
  // "warn"; cache_required: never, when_named or always): the one table bindings and tools read
  // (the Python package's kjit.Runtime(**options)). Naming cache_dir makes cache_required
  // when_named, as --cache-dir does, unless cache_required is set after it. `log`, a callback,
  // has no text; set it directly. Throws UsageError naming the option for an unknown name (with
  // the known ones) or a value its reader refuses.
  struct Option {
    std::string_view name;      // the field
    std::string_view variable;  // the KJIT_* variable it mirrors; "" for none
    std::string_view doc;
  };
  static std::span<const Option> options();
  void set(std::string_view name, std::string_view value);
};

// Counters of one Runtime (this process), each counted once: a request is a registry hit, a
// disk hit, a remote hit (remote_hits), waited (for another thread, process or node) or a miss
// that compiled; damaged entries, evictions, bytes and failed writes are the disk's.
struct RuntimeStats {
  std::uint64_t registry_hits = 0, disk_hits = 0, misses = 0, compiles = 0, waits = 0,
                damaged = 0, evictions = 0, bytes_written = 0, bytes_read = 0, store_failures = 0;
  // The remote tier, as in CacheStats: GETs made and their summed latency (microseconds), hits,
  // misses, values rejected (damaged, foreign, unsigned), failed calls and timeouts, writes sent
  // and dropped, bytes each way; of them, the hits an HTTP level answered, the HTTP levels' failed
  // calls, and the writes that backfilled a faster level after a hit in a slower one.
  std::uint64_t remote_requests = 0, remote_hits = 0, remote_misses = 0, remote_rejected = 0, remote_errors = 0,
                remote_timeouts = 0, remote_writes = 0, remote_dropped = 0, remote_bytes_read = 0,
                remote_bytes_written = 0, remote_latency_us = 0, remote_http_hits = 0, remote_http_errors = 0,
                remote_backfills = 0;
  // Reads not made because the key's shard was skipped (down: in its back-off): misses
  // (counted in remote_misses too), never sent to another shard.
  std::uint64_t remote_shard_down = 0;
};

// Every counter of RuntimeStats by its name, in the order above: the one list bindings and tools
// read (the Python package's Runtime.stats()), so a counter added above is added here only.
template <class F>
void for_each_counter(const RuntimeStats& s, F&& f) {
  f("registry_hits", s.registry_hits), f("disk_hits", s.disk_hits), f("misses", s.misses);
  f("compiles", s.compiles), f("waits", s.waits), f("damaged", s.damaged), f("evictions", s.evictions);
  f("bytes_written", s.bytes_written), f("bytes_read", s.bytes_read), f("store_failures", s.store_failures);
  f("remote_requests", s.remote_requests), f("remote_hits", s.remote_hits), f("remote_misses", s.remote_misses);
  f("remote_rejected", s.remote_rejected), f("remote_errors", s.remote_errors), f("remote_timeouts", s.remote_timeouts);
  f("remote_writes", s.remote_writes), f("remote_dropped", s.remote_dropped), f("remote_bytes_read", s.remote_bytes_read);
  f("remote_bytes_written", s.remote_bytes_written), f("remote_latency_us", s.remote_latency_us);
  f("remote_http_hits", s.remote_http_hits), f("remote_http_errors", s.remote_http_errors);
  f("remote_backfills", s.remote_backfills), f("remote_shard_down", s.remote_shard_down);
}
static_assert(sizeof(RuntimeStats) == 25 * sizeof(std::uint64_t), "a RuntimeStats counter changed: list it in for_each_counter");

}  // namespace kjit
