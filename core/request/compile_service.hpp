// kjit::request::CompileService: a prepared request's compile result from the cache tiers, asked
// once through their one front (request::Storage: the disk, then a fleet's remote; the policies over
// them), or from NVRTC once per key: in this process the first thread compiles and the others wait
// for its result; across processes and nodes the storage's locks do the same (Storage::fill).
// KJIT_REQUIRE_HIT turns a miss into CacheMissError, naming why each tier missed as the lookup
// answered it. The request path does the one thing the next process needs, a compile's own entry
// written to the disk, and hands the rest to the service's one background thread
// (system::Background, started on first need): the lock heartbeat of every compile in flight, the
// usage accounting and eviction after a write, a remote hit's backfill to the disk, the remote's
// writes, releases and lock refreshes, and the stats flush. It owns the storage, that worker and
// the precompiled-header folders. Observers (dumps) see every result through one hook. Throws CompileError for a program NVRTC rejects, and what NVRTC throws.
// fork(): a child's service has none of its parent's compiles in flight (a key the parent was
// compiling is compiled again in the child, never waited for), its own fresh worker and stats
// flush; a fork waits for the NVRTC and nvJitLink calls in progress (system::AtFork::Busy).
#pragma once

#include <kjit/compile_options.hpp>
#include <kjit/compile_result.hpp>
#include <kjit/device.hpp>
#include <kjit/log.hpp>
#include <kjit/program.hpp>
#include <kjit/runtime_config.hpp>

#include "core/system/at_fork.hpp"
#include "core/system/background.hpp"
#include "core/cache/key.hpp"
#include "core/compile/options/option_marshalling.hpp"
#include "core/compile/pch_directories.hpp"
#include "core/request/cache_key.hpp"
#include "core/request/counters.hpp"
#include "core/request/entry_store.hpp"
#include "core/request/storage.hpp"

#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kjit::request {

class CompileService final : public EntryStore {
public:
  using Log = std::function<void(LogLevel, std::string_view)>;  // already filtered by level
  using ResultHook = std::function<void(const Program&, const CompileResult&)>;
  // What makes a result on a miss: empty for NVRTC on the program; a link's nvJitLink run.
  // It fills ptx/cubin/log/lowered names; the service sets the key and outcome and stores it,
  // unless the producer clears `keep` (a result its key does not describe is not cached).
  using Producer = std::function<CompileResult(bool& keep)>;

  // Throws UsageError for a remote cache address or secret file it cannot use, UnavailableError
  // for a cache folder it cannot use when config.cache_required asks for it.
  CompileService(const RuntimeConfig& config, Counters& counters, Log log);
  // Finishes the background work (at most Background::Limits::exit_bound), then writes the counters.
  ~CompileService();
  CompileService(const CompileService&) = delete;
  CompileService& operator=(const CompileService&) = delete;

  // The arch a request for `arch` compiles to: a named arch checked against NVRTC; native
  // resolved for `device` (default: the current one; needs a driver). Throws UsageError.
  Arch resolve(const Arch& arch, std::optional<Device> device) const;
  // NVRTC's version and archs for this process (base::nvrtc_facts), kept in this cache folder's
  // notes: every request asks first, so that a hit never opens NVRTC. Throws as NVRTC's open does.
  void know_nvrtc() const;
  // The fast path's setting (RuntimeConfig::nvrtc_fast): how requests compile, and part of their key.
  compile::FastPath fast_path() const noexcept {
    return m_config.nvrtc_fast ? compile::FastPath::on : compile::FastPath::off;
  }
  // A request for `device`: the disk and the remote first, under the arch the request resolves
  // to when NVRTC supports it (a hit asks NVRTC nothing); a miss resolves the arch properly,
  // which may throw for an arch NVRTC does not support, then compiles.
  CompileResult obtain(const Program& program, const compile::NormalizedOptions& options, const Device& device);
  // For a named (or resolved) arch.
  CompileResult obtain(const Program& program, const compile::NormalizedOptions& options, const Arch& arch);

  // The cache tiers (Storage::find), then NVRTC (or `produce`) once per key; the hook sees the
  // result. Every request (obtain, a link and each of its parts) is timed once, by one
  // RequestTimer (compile_service.cpp): the profiler's phases and the -v / KJIT_LOG=info line read
  // its marks. With config.require_hit, a miss is a CacheMissError (why each tier missed).
  CompileResult get(const Program& program, const Arch& arch, const PreparedRequest& request,
                    const Producer& produce = {});

  // Entries that are not compile results (a tuner's decisions): see EntryStore.
  std::optional<std::string> find_entry(const cache::Key& key) override;
  void store_entry(const cache::Key& key, const std::string& bytes) override;

  // Called with every result get() or compile() returns (KJIT_DUMP_DIR's dumps).
  void set_result_hook(ResultHook hook) { m_hook = std::move(hook); }

  // The Runtime's log (already filtered by level).
  void log(LogLevel level, std::string_view message) const { m_log(level, message); }
  const std::string& cache_dir() const { return m_storage.cache_dir(); }
  // Writes the store's counters into the cache directory's persistent stats (on this thread).
  void flush() { m_storage.flush(); }
  // Waits until the background work queued so far is done (backfills, usage, flushes, remote writes).
  void drain() { m_background.drain(); }
  // Starts the background thread now (system::Background::start_now).
  void start_background() { m_background.start_now(); }

private:
  // KJIT_REQUIRE_HIT: throws CacheMissError naming why each tier missed this request's key.
  [[noreturn]] void refuse_miss(const Program& program, const PreparedRequest& request,
                                std::vector<CacheMissError::Tier> missed) const;
  class RequestTimer;
  // The storage's answer, then on a miss the compile: the request after its key, timed by `timer`.
  CompileResult answer(const Program& program, const Arch& arch, const PreparedRequest& request,
                       const Producer& produce, RequestTimer& timer);
  // After a miss the storage answered (`missed`: why each tier missed): NVRTC (or `produce`) once
  // per key, or CacheMissError where a hit is required.
  CompileResult compile(const Program& program, const Arch& arch, const PreparedRequest& request,
                        const Producer& produce, std::vector<CacheMissError::Tier> missed);
  // The request's answer, its phase handed to a profiler and its one -v line logged.
  CompileResult finished(const Program& program, CompileResult result, const PreparedRequest& request, bool hit,
                         bool produced, const RequestTimer& timer) const;
  CompileResult compile_once(const Program& program, const Arch& arch, const PreparedRequest& request,
                             const Producer& produce);
  CompileResult run_nvrtc(const Program& program, const Arch& arch, const PreparedRequest& request);
  CompileResult observed(const Program& program, CompileResult result) const;

  const RuntimeConfig& m_config;
  Counters& m_counters;
  Log m_log;
  ResultHook m_hook;
  // Declared before what its jobs use (the storage's store and remote): the destructor finishes it first.
  system::Background m_background;
  Storage m_storage;
  compile::PchDirectories m_pch;  // used when config.precompiled_headers

  // Compiles in flight in this process: key -> the result others wait for.
  std::mutex m_inflight_mutex;
  std::unordered_map<cache::Key, std::shared_future<CompileResult>, cache::KeyHash> m_inflight;
  system::AtFork::Registration m_fork;  // last: gone before what its handlers use
};

}  // namespace kjit::request
