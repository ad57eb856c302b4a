// kjit::Runtime: the request path. load() goes registry (already loaded in this process) ->
// disk cache -> NVRTC; compile() goes disk cache -> NVRTC and needs no GPU. A Runtime is
// thread-safe; Runtime::global() is configured from the environment (KJIT_CACHE_DIR,
// KJIT_CACHE_MAX_SIZE, KJIT_CACHE_DISABLE, KJIT_ALWAYS_COMPILE, KJIT_DUMP_DIR, KJIT_LOG,
// KJIT_LOCK_TIMEOUT, KJIT_LOCK_STALE_AFTER, KJIT_CACHE_SHARED, KJIT_REMOTE_*). Throws CompileError, CudaError,
// DriverNotFoundError, UsageError.
#pragma once

#include <kjit/export.hpp>

#include <kjit/compile_options.hpp>
#include <kjit/compile_result.hpp>
#include <kjit/device.hpp>
#include <kjit/link.hpp>
#include <kjit/log.hpp>
#include <kjit/module.hpp>
#include <kjit/program.hpp>

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

struct KJIT_API RuntimeConfig {
  std::filesystem::path cache_dir;              // empty: KJIT_CACHE_DIR, else the default cache dir
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
  LogLevel log_level = LogLevel::warn;
  LogCallback log;                              // empty: stderr

  // The cache directory must be this user's and writable by no one else (it holds executable
  // code); otherwise it is not used (one warning; kernels are compiled in memory). A team cache
  // opts in (KJIT_CACHE_SHARED=1): the group may write; the folder must still be this user's or
  // root's, with one of this user's groups, never world-writable, and what is read from it must
  // carry that group (or be this user's). kjit makes it all 2770/0660; never the temp fallback.
  bool cache_shared = false;
  // A fleet's shared cache behind the local disk (KJIT_REMOTE_CACHE): redis://host[:port][/db]
  // or unix:///path/to/redis.sock; empty: none. A remote hit is written to the local disk; a
  // compile is sent to the remote in the background; nodes that miss together compile once.
  // Trouble with the remote never fails a request: it is skipped for a while (one warning).
  std::string remote_cache;
  bool remote_read_only = false;                        // KJIT_REMOTE_READONLY: read, never write
  std::filesystem::path remote_secret_file;             // KJIT_REMOTE_SECRET_FILE: sign, load only signed
  std::chrono::milliseconds remote_timeout{50};         // KJIT_REMOTE_TIMEOUT: connect, and each reply
  std::chrono::seconds remote_ttl{0};                   // KJIT_REMOTE_TTL: values expire; 0: never
  std::uint64_t remote_max_value_size = 64ull << 20;    // KJIT_REMOTE_MAX_VALUE: larger ones are not sent

  // Defaults overridden by the KJIT_* environment variables. Throws UsageError for a value
  // it cannot parse (KJIT_CACHE_MAX_SIZE=lots).
  static RuntimeConfig from_environment();
};

// Counters of one Runtime (this process).
struct RuntimeStats {
  std::uint64_t registry_hits = 0, disk_hits = 0, misses = 0, compiles = 0, waits = 0,
                damaged = 0, evictions = 0, store_failures = 0;
  // The remote tier, as in CacheStats: GETs made and their summed latency (microseconds), hits,
  // misses, values rejected (damaged, foreign, unsigned), failed calls and timeouts, writes sent
  // and dropped, bytes each way.
  std::uint64_t remote_requests = 0, remote_hits = 0, remote_misses = 0, remote_rejected = 0, remote_errors = 0,
                remote_timeouts = 0, remote_writes = 0, remote_dropped = 0, remote_bytes_read = 0,
                remote_bytes_written = 0, remote_latency_us = 0;
};

class KJIT_API Runtime {
public:
  static Runtime& global();
  // RuntimeConfig::from_environment().
  Runtime();
  explicit Runtime(RuntimeConfig config);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Compile (or take from the disk cache) for options.arch; native resolves to the current
  // device's arch. Needs no GPU for a named arch.
  CompileResult compile(const Program& program, const CompileOptions& options);
  // Compile or take from the cache, then load on `device`; a repeated request returns the
  // module already loaded.
  Module load(const Program& program, const CompileOptions& options = {},
              std::optional<Device> device = std::nullopt);
  // Links the programs and device code of `link` with nvJitLink (include/kjit/link.hpp): the
  // programs compiled with `options` as relocatable code, each through the cache, then one link
  // cached like a compile. options.arch native resolves to the current device; a named (real)
  // arch needs no GPU. Throws LinkError for a link nvJitLink refuses, CompileError for a program.
  CompileResult link(const Link& link, const CompileOptions& options = {});
  // link(), then loaded on `device` (native: its arch) through the registry.
  Module load(const Link& link, const CompileOptions& options = {}, std::optional<Device> device = std::nullopt);
  // Loads a result compile() returned on `device`, through the same registry: a result whose
  // module is already loaded there (same key) returns that module.
  Module load(CompileResult result, std::optional<Device> device = std::nullopt);

  // The arch a request for `arch` compiles to: a named arch checked against NVRTC, native
  // resolved for `device` (default: the current one; needs a driver). Throws UsageError.
  Arch resolve(const Arch& arch, std::optional<Device> device = std::nullopt) const;

  // The key a request would use, with every field that went into it, in order.
  struct KeyExplanation {
    std::string key;                                          // 32 hex digits
    std::vector<std::pair<std::string, std::string>> fields;  // label, value (long values summarized)
  };
  KeyExplanation explain(const Program& program, const CompileOptions& options);

  const RuntimeConfig& config() const;
  std::filesystem::path cache_dir() const;
  RuntimeStats stats() const;
  // Writes this process's cache counters into the cache directory's persistent stats.
  void flush_stats();
  // Delivers a message the caller asked for (load_inline's verbose) to the log callback (or
  // stderr) at info, whatever the configured level.
  void report(std::string_view message) const;

private:
  friend struct RuntimeAccess;  // kjit's own parts (the tuner) reach the compile service
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

// The NVRTC version as "13.0", and the real archs it can compile for (75, 80, ...).
KJIT_API std::string nvrtc_version();
KJIT_API std::vector<int> supported_archs();
KJIT_API std::string_view version();  // kjit's own

}  // namespace kjit
