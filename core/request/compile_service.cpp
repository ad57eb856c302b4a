#include "core/request/compile_service.hpp"

#include "core/trace/phase.hpp"

#include <kjit/error.hpp>

#include "core/cache/config.hpp"
#include "core/compile/arch_resolution.hpp"
#include "core/base/environment.hpp"
#include "core/base/toolkit_location.hpp"
#include "core/compile/nvrtc_compiler.hpp"
#include "core/compile/option_marshalling.hpp"
#include "core/trace/nvtx.hpp"
#include "core/request/entry_codec.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <new>

namespace kjit::request {

PreparedRequest PreparedRequest::make(const Program& program, const compile::NormalizedOptions& options,
                                      const Arch& arch) {
  std::vector<std::string> flags = compile::marshal(options, arch);
  CacheKey key = CacheKey::compute(program, flags, arch, options->include_dirs, program.directory());
  return PreparedRequest{std::move(flags), std::move(key)};
}

CompileService::CompileService(const RuntimeConfig& config, Counters& counters, Log log)
    : m_config(config), m_counters(counters), m_log(std::move(log)) {
  if (config.require_hit && config.always_compile) {
    throw UsageError("KJIT_REQUIRE_HIT (a miss is an error) and KJIT_ALWAYS_COMPILE (every request compiles) "
                     "contradict each other: set one");
  }
  m_fork = system::AtFork::add({[this] { m_inflight_mutex.lock(); }, [this] { m_inflight_mutex.unlock(); },
                               [this] {
                                 // The parent's compiles in flight are its threads', not here: their
                                 // promises are never kept in this process.
                                 new (&m_inflight_mutex) std::mutex();
                                 m_inflight.clear();
                                 m_flush_queued = false;  // the queued flush was the parent's worker's
                               }});
  m_cache_dir = config.cache_dir.empty() ? base::cache_dir_from_environment() : config.cache_dir.native();
  if (config.cache_disabled) return;
  // Entries are executable code: a folder someone else may write into is not read (the store
  // checks it when it opens it: cache/dir_trust).
  // A folder not made yet is made by the first write (the worker's, for a remote hit).
  auto store = std::make_unique<cache::Store>(cache::StoreConfig{
      m_cache_dir, config.cache_max_size,
      config.cache_shared ? cache::DirSharing::group : cache::DirSharing::private_to_user, &m_counters.cache, true});
  if (auto trusted = store->trusted()) {
    m_store = std::move(store);
    if (config.log_level >= LogLevel::info) m_log(LogLevel::info, fmt::format("cache: {}", m_cache_dir));
  } else {
    // A folder the user named and kjit cannot use is an error where the config asks for it: the
    // user would otherwise compile every time without knowing why.
    const bool named = !config.cache_dir.empty() || base::env_text(base::Env::cache_dir).has_value();
    if (config.cache_required == CacheRequired::always || (config.cache_required == CacheRequired::when_named && named)) {
      throw UnavailableError(fmt::format(
          "the cache folder {} is not in use: {}. The cache is required here, so nothing is compiled without it: "
          "name a folder this user owns or may create, writable by no one else, or turn the cache off "
          "(KJIT_CACHE_DISABLE=1)",
          m_cache_dir, trusted.error().message));
    }
    m_warned_store = true;
    m_log(LogLevel::warn, fmt::format("{}; kernels are compiled in memory and not kept", trusted.error().message));
  }
  if (config.remote_cache.empty()) return;
  cache::RemoteConfig remote;
  remote.url = config.remote_cache;
  remote.read_only = config.remote_read_only;
  remote.http_auth_file = config.remote_http_auth_file.native();
  remote.timeouts = cache::RemoteTimeouts{config.remote_timeout, config.remote_timeout};
  remote.ttl = config.remote_ttl;
  remote.max_value_size = config.remote_max_value_size;
  remote.lock_ttl = config.lock_stale_after;
  auto signer = cache::Signer::from_files(config.remote_secret_file.native(), config.remote_signing_key_file.native(),
                                          config.remote_public_key_file.native());
  if (!signer) throw UsageError(signer.error().message);
  remote.signer = std::move(*signer);
  auto tier = cache::RemoteTier::open(std::move(remote), m_counters.cache,
                                      [log = m_log](cache::RemoteTier::Severity severity, std::string_view message) {
                                        log(severity == cache::RemoteTier::Severity::warning ? LogLevel::warn
                                                                                             : LogLevel::info,
                                            message);
                                      },
                                      &m_background);
  if (!tier) throw UsageError(tier.error().message);
  m_remote = std::move(*tier);
}

CompileService::~CompileService() {
  // Backfills, usage, remote writes: at most exit_bound more (what is left is dropped, counted).
  m_background.finish(m_background.limits().exit_bound);
  m_remote.reset();  // its last writes count into the store's counters, flushed here
  flush();
}

namespace {

// KJIT_REQUIRE_HIT: why each tier missed the last lookup of this thread (find() notes it, when a
// hit is required; compile(), which follows on the same thread, names it in its error).
struct MissNote {
  bool set = false;
  cache::Key key;
  std::vector<CacheMissError::Tier> tiers;
};
thread_local MissNote t_miss;

}  // namespace

Arch CompileService::resolve(const Arch& arch, std::optional<Device> device) const {
  if (!arch.is_native()) return compile::check_arch(arch);
  const Device d = device ? *device : Device::current();  // throws without a driver
  return compile::arch_for_device(d.compute_capability(), d.ordinal());
}

// One request's timing, taken once: the profiler's phase (while a Profiler records, on its
// clock) and the -v / KJIT_LOG=info line (on the steady clock) read the same marks. With neither
// wanted, no clock is read.
class CompileService::RequestTimer {
public:
  explicit RequestTimer(bool log) : m_recorded(trace::recording()), m_log(log), m_start(now()) {}
  void hashed() { m_hashed = now(); }
  void looked_up() { m_looked_up = now(); }

  // Hands the request's phase to the profiler (its lookup when it was a hit, else its compile or
  // wait) and returns the line's phases when it is logged: "lookup 0.02 ms, NVRTC 31.0 ms, lock
  // and store 0.40 ms, key hashed in 0.01 ms".
  std::string finish(const Program& program, const CompileResult& r, bool hit, bool produced) const {
    const std::uint64_t done = now();
    const std::uint64_t from = m_hashed != 0 ? m_hashed : m_start;
    if (m_recorded && m_start != 0 && done != 0) {  // 0: the recorder detached meanwhile
      trace::HostRange range;
      range.start = hit ? from : m_looked_up;
      range.end = hit ? m_looked_up : done;
      range.thread = trace::thread_id();
      range.phase = phase_of(r.outcome);
      range.name = program.name();
      range.key = r.key;
      range.outcome = to_string(r.outcome);
      trace::record_range(std::move(range));
    }
    if (!m_log) return {};
    std::string phases = fmt::format("lookup {:.2f} ms", ms(from, m_looked_up));
    if (r.outcome == Outcome::compiled) {
      // After the lookup: the lock, the producer (NVRTC, or a link's nvJitLink: its own time in
      // compile_ms) and the store.
      phases += fmt::format(", {} {:.1f} ms, lock and store {:.2f} ms", produced ? "nvJitLink" : "NVRTC", r.compile_ms,
                            std::max(0.0, ms(m_looked_up, done) - r.compile_ms));
    } else if (!hit) {
      phases += fmt::format(", waiting {:.1f} ms", ms(m_looked_up, done));
    }
    if (m_hashed != 0) phases += fmt::format(", key hashed in {:.2f} ms", ms(m_start, m_hashed));
    return phases;
  }

private:
  static trace::Phase phase_of(Outcome outcome) {
    switch (outcome) {
    case Outcome::hit: return trace::Phase::disk_hit;
    case Outcome::remote_hit: return trace::Phase::remote_hit;
    case Outcome::waited: return trace::Phase::wait;
    default: return trace::Phase::compile;
    }
  }
  std::uint64_t now() const {
    if (m_recorded) return trace::now();
    if (!m_log) return 0;
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
  }
  static double ms(std::uint64_t a, std::uint64_t b) { return b > a ? static_cast<double>(b - a) / 1e6 : 0.0; }

  bool m_recorded, m_log;
  std::uint64_t m_start, m_hashed = 0, m_looked_up = 0;
};

CompileResult CompileService::obtain(const Program& program, const compile::NormalizedOptions& o,
                                     const Device& device) {
  RequestTimer timer(m_config.log_level >= LogLevel::info);
  // The guess: the device's own arch. An entry exists only if this NVRTC (its version is in the
  // key) compiled for that arch, so a hit needs no check.
  const Arch guess = o->arch.is_native() ? Arch::sm(device.compute_capability()) : o->arch;
  const auto prepared = PreparedRequest::make(program, o, guess);
  timer.hashed();
  std::optional<CompileResult> hit = find(program, guess, prepared);
  if (hit) {
    timer.looked_up();
    return finished(program, std::move(*hit), prepared, true, false, timer);
  }
  const Arch arch = resolve(o->arch, device);
  if (arch == guess) {
    timer.looked_up();
    return finished(program, compile(program, arch, prepared), prepared, false, false, timer);
  }
  // A device newer than NVRTC (PTX for an older arch): the guess was no request of its own
  // (a lookup counts nothing; the request's outcome is counted once).
  return answer(program, arch, PreparedRequest::make(program, o, arch), {}, timer);
}

CompileResult CompileService::obtain(const Program& program, const compile::NormalizedOptions& o, const Arch& arch) {
  RequestTimer timer(m_config.log_level >= LogLevel::info);
  const PreparedRequest prepared = PreparedRequest::make(program, o, arch);
  timer.hashed();
  return answer(program, arch, prepared, {}, timer);
}

CompileResult CompileService::get(const Program& program, const Arch& arch, const PreparedRequest& request,
                                  const Producer& produce) {
  RequestTimer timer(m_config.log_level >= LogLevel::info);
  return answer(program, arch, request, produce, timer);
}

CompileResult CompileService::answer(const Program& program, const Arch& arch, const PreparedRequest& request,
                                     const Producer& produce, RequestTimer& timer) {
  std::optional<CompileResult> hit = find(program, arch, request);
  timer.looked_up();
  if (hit) return finished(program, std::move(*hit), request, true, static_cast<bool>(produce), timer);
  return finished(program, compile(program, arch, request, produce), request, false, static_cast<bool>(produce), timer);
}

CompileResult CompileService::finished(const Program& program, CompileResult r, const PreparedRequest& request,
                                       bool hit, bool produced, const RequestTimer& timer) const {
  const std::string phases = timer.finish(program, r, hit, produced);
  if (m_config.log_level >= LogLevel::info) {  // -v, KJIT_LOG=info: one line a request
    m_log(LogLevel::info, fmt::format("program {} for {}: {}, key {} ({}); entry {}", program.name(), r.arch.str(),
                                      to_string(r.outcome), r.key, phases,
                                      m_store ? m_store->entry_file(request.key.key)
                                              : std::string("not kept (no cache)")));
  }
  return r;
}

CompileResult CompileService::observed(const Program& program, CompileResult result) const {
  if (m_hook) m_hook(program, result);
  return result;
}

std::optional<CompileResult> CompileService::find(const Program& program, const Arch& arch,
                                                  const PreparedRequest& request) {
  if (m_config.always_compile) return std::nullopt;
  const cache::Key& key = request.key.key;
  MissNote* note = m_config.require_hit ? &t_miss : nullptr;  // KJIT_REQUIRE_HIT: why each tier missed
  auto missed = [note](const char* tier, std::string why) {
    if (note) note->tiers.push_back({tier, std::move(why)});
  };
  if (note) *note = MissNote{false, key, {}};  // set once every tier missed
  if (m_store) {
    cache::GetResult g = m_store->get_in_place(key);
    switch (g.outcome) {
    case cache::GetResult::Outcome::hit:
      ++m_counters.cache.hits;
      return observed(program, from_entry(std::move(g), program.name(), arch, request.flags, key));
    case cache::GetResult::Outcome::damaged:
      m_log(LogLevel::warn, fmt::format("cache entry for program {} (key {}) was damaged and is not used: {}",
                                        program.name(), key.hex(), g.message));
      missed("disk", "damaged: " + g.message);
      break;
    case cache::GetResult::Outcome::error:
      m_log(LogLevel::warn, fmt::format("reading the cache entry for program {} (key {}): {}", program.name(),
                                        key.hex(), g.message));
      missed("disk", "unreadable: " + g.message);
      break;
    case cache::GetResult::Outcome::miss: missed("disk", "absent from " + m_cache_dir); break;
    }
  } else {
    missed("disk", m_config.cache_disabled ? "none (the cache is disabled)"
                                           : "not in use (its folder " + m_cache_dir + " was refused)");
  }
  if (!m_remote) {
    missed("remote", "none configured (KJIT_REMOTE_CACHE)");
    if (note) note->set = true;
    return std::nullopt;
  }
  cache::RemoteGet remote = m_remote->get(key);
  if (note && remote.outcome != cache::RemoteGet::Outcome::hit) {
    missed("remote", remote.why);  // each server asked: absent, rejected, down, unreachable
    note->set = true;
  }
  if (remote.outcome != cache::RemoteGet::Outcome::hit) return std::nullopt;
  // A remote hit: counted by the tier (remote_hits); the disk's lookup counted nothing.
  return observed(program, from_remote(std::move(remote), program, arch, request));
}

CompileResult CompileService::from_remote(cache::RemoteGet&& value, const Program& program, const Arch& arch,
                                          const PreparedRequest& request) {
  const cache::Key& key = request.key.key;
  if (!m_store) {
    cache::GetResult g;
    g.outcome = cache::GetResult::Outcome::hit;
    g.bytes = std::move(value.bytes);
    g.sections = std::move(value.sections);
    CompileResult r = from_entry(std::move(g), program.name(), arch, request.flags, key);
    r.outcome = Outcome::remote_hit;
    return r;
  }
  // The result copies what it needs; the entry's bytes go on to the disk (the next process on
  // this machine hits its own disk), written by the worker after this request returns.
  CompileResult r = from_entry_copy(value.bytes, value.sections, program.name(), arch, request.flags, key);
  r.outcome = Outcome::remote_hit;
  backfill(key, std::move(value.bytes));
  return r;
}

void CompileService::put_own(const cache::Key& key, std::string_view bytes) {
  cache::PutResult p = m_store->put_bytes(key, bytes, cache::Store::Accounting::deferred);
  note_put(p);
  if (!p.stored) return;
  system::Background::Job job;
  job.run = [this, change = std::move(p.change)] { m_store->account(change); };
  m_background.post(std::move(job));  // dropped: the total drifts until the next recount
}

void CompileService::backfill(const cache::Key& key, std::string bytes) {
  system::Background::Job job;
  job.bytes = bytes.size();
  job.run = [this, key, bytes = std::move(bytes)] { note_put(m_store->put_bytes(key, bytes)); };
  m_background.post(std::move(job));  // dropped: the next process gets a remote hit again
  schedule_flush();
}

void CompileService::schedule_flush() {
  if (!m_store || m_flush_queued.exchange(true)) return;
  system::Background::Job job;
  job.run = [this] {
    m_flush_queued = false;
    m_store->flush_stats(cache::Store::k_background_lock_wait);  // the destructor's flush catches up
  };
  job.drop = [this] { m_flush_queued = false; };  // the destructor flushes what is left
  m_background.post(std::move(job));
}

void CompileService::note_put(const cache::PutResult& p) {
  if (p.stored) return;  // a failed write is counted by the store (store_failures)
  if (!m_warned_store.exchange(true)) {
    m_log(LogLevel::warn, fmt::format("cannot write to the kjit cache in {} ({}); kernels are compiled in memory "
                                      "and not kept", m_cache_dir, p.message));
  }
}

void CompileService::send_to_remote(const cache::Key& key, const std::string& entry_bytes, std::string token) {
  if (!m_remote) return;
  m_remote->put_async(key, entry_bytes, std::move(token));  // a dropped write is counted by the tier
}

CompileResult CompileService::compile(const Program& program, const Arch& arch, const PreparedRequest& request,
                                      const Producer& produce) {
  if (m_config.require_hit) {
    if (!t_miss.set || !(t_miss.key == request.key.key)) {  // no lookup of this key on this thread: look now
      if (auto hit = find(program, arch, request)) return std::move(*hit);
    }
    refuse_miss(program, request);
  }
  return observed(program, compile_once(program, arch, request, produce));
}

void CompileService::refuse_miss(const Program& program, const PreparedRequest& request) {
  std::vector<CacheMissError::Tier> tiers = std::move(t_miss.tiers);
  t_miss = MissNote{};
  std::string asked;
  for (const auto& t : tiers) asked += fmt::format("{}{}: {}", asked.empty() ? "" : "; ", t.name, t.why);
  const std::string key = request.key.key.hex();
  throw CacheMissError(program.name(), key, std::move(tiers),
                       fmt::format("program {} (key {}) is in no cache tier and a hit is required (KJIT_REQUIRE_HIT): "
                                   "it is not compiled. Asked: {}",
                                   program.name(), key, asked));
}

CompileResult CompileService::compile_once(const Program& program, const Arch& arch, const PreparedRequest& request,
                                           const Producer& produce) {
  const cache::Key& key = request.key.key;
  std::promise<CompileResult> promise;
  std::shared_future<CompileResult> future;
  {
    std::lock_guard lock(m_inflight_mutex);
    if (auto it = m_inflight.find(key); it != m_inflight.end()) {
      future = it->second;
    } else {
      m_inflight.emplace(key, promise.get_future().share());
    }
  }
  if (future.valid()) {
    ++m_counters.cache.waits;
    CompileResult r = future.get();  // rethrows the compiler's error
    r.outcome = Outcome::waited;
    return r;
  }
  try {
    CompileResult r = compile_across_processes(program, arch, request, produce);
    promise.set_value(r);
    std::lock_guard lock(m_inflight_mutex);
    m_inflight.erase(key);
    return r;
  } catch (...) {
    promise.set_exception(std::current_exception());
    std::lock_guard lock(m_inflight_mutex);
    m_inflight.erase(key);
    throw;
  }
}

CompileResult CompileService::compile_across_processes(const Program& program, const Arch& arch,
                                                       const PreparedRequest& request, const Producer& produce) {
  ++m_counters.cache.misses;
  const cache::Key& key = request.key.key;
  // Across nodes: the remote lock, taken (when there is a remote one can write) once this
  // process is the one on this machine that compiles; or the value another node stored.
  auto across_nodes = [&]() -> CompileResult {
    if (!m_remote || m_remote->read_only() || m_config.always_compile) {
      return produce_and_store(program, arch, request, produce);
    }
    auto progress = [&](std::chrono::milliseconds waited) {
      m_log(LogLevel::info, fmt::format("waiting {:.1f} s for another node compiling program {} (key {}) via {}",
                                        waited.count() / 1000.0, program.name(), key.hex(), cache::redact_url(m_config.remote_cache)));
    };
    cache::RemoteLock lock = m_remote->lock_or_wait(key, m_config.lock_timeout, m_config.wait_progress_every, progress);
    switch (lock.outcome) {
    case cache::RemoteLock::Outcome::value: {
      ++m_counters.cache.waits;
      CompileResult r = from_remote(std::move(lock.value), program, arch, request);
      r.outcome = Outcome::waited;
      return r;
    }
    case cache::RemoteLock::Outcome::acquired:
      try {
        return produce_and_store(program, arch, request, produce, lock.token);  // released once sent
      } catch (...) {
        m_remote->release_async(key, lock.token);  // NVRTC refused it: the next node tries
        throw;
      }
    case cache::RemoteLock::Outcome::timed_out:
      m_log(LogLevel::warn, fmt::format("compiling program {} (key {}) without the remote lock: {}", program.name(),
                                        key.hex(), lock.message));
      break;
    case cache::RemoteLock::Outcome::unavailable: break;  // the tier warned when it went down
    }
    return produce_and_store(program, arch, request, produce);
  };
  if (!m_store) return across_nodes();
  auto progress = [&](std::chrono::milliseconds waited) {
    m_log(LogLevel::info, fmt::format("waiting {:.1f} s for another process compiling program {} (key {})",
                                      waited.count() / 1000.0, program.name(), key.hex()));
  };
  auto lock = m_store->lock(key, m_config.lock_timeout, progress, m_config.wait_progress_every,
                            m_config.lock_stale_after);
  if (!lock) {
    // The message says which: the wait bound passed (timed out) or locking failed.
    m_log(lock.error().reason == system::Failure::Reason::stalled ? LogLevel::warn : LogLevel::info,
          fmt::format("compiling program {} (key {}) without the cache lock: {}", program.name(),
                                      key.hex(), lock.error().message));
    CompileResult r = produce_and_store(program, arch, request, produce);
    schedule_flush();
    return r;
  }
  if (!m_config.always_compile) {
    // Another process may have compiled it while this one waited for the lock.
    cache::GetResult g = m_store->get_in_place(key);
    if (g.outcome == cache::GetResult::Outcome::hit) {
      ++m_counters.cache.waits;
      CompileResult r = from_entry(std::move(g), program.name(), arch, request.flags, key);
      r.outcome = Outcome::waited;
      return r;
    }
  }
  CompileResult r = [&] {
    // Waiters see this process working: the lock file's mtime, now and every second (the worker).
    system::Background::Recurring heartbeat = m_background.heartbeat(lock->fd());
    return across_nodes();
  }();
  lock->release();
  schedule_flush();
  return r;
}

CompileResult CompileService::run_nvrtc(const Program& program, const Arch& arch, const PreparedRequest& request) {
  const std::vector<std::string>& flags = request.flags;
  trace::nvtx::Range range("compile", program.name());
  trace::PhaseScope phase;
  const system::AtFork::Busy busy;  // a fork waits for NVRTC (its locks and once-initialisations)
  base::load_nvrtc_builtins();     // beside the libnvrtc in use, wherever its toolkit is
  compile::NvrtcOutput out;
  const auto fast = m_config.nvrtc_fast ? compile::FastPath::on : compile::FastPath::off;
  if (m_config.precompiled_headers) {
    auto lease = m_pch.acquire();
    out = compile::NvrtcCompiler::compile(program, flags, arch, lease.dir(), fast);
  } else {
    out = compile::NvrtcCompiler::compile(program, flags, arch, {}, fast);
  }
  phase.end(trace::Phase::nvrtc, program.name(), request.key.key.hex());
  if (m_config.log_level >= LogLevel::debug) {
    m_log(LogLevel::debug, fmt::format("compiled program {} (key {}) with {} in {:.1f} ms", program.name(),
                                       request.key.key.hex(), compile::describe(out), out.result.compile_ms));
  }
  if (!out.succeeded) {
    std::string excerpt = compile::source_excerpt(program.name(), program.source(), out.result.log);
    throw CompileError(program.name(), flags, out.result.log, excerpt,
                       fmt::format("compiling program {} with NVRTC {} ({}) failed:\n{}{}{}", program.name(),
                                   compile::NvrtcCompiler::version(), fmt::join(flags, " "), out.result.log,
                                   excerpt.empty() ? "" : "\nsource:\n", excerpt));
  }
  return std::move(out.result);
}

CompileResult CompileService::produce_and_store(const Program& program, const Arch& arch,
                                                const PreparedRequest& request, const Producer& produce,
                                                std::string remote_token) {
  bool keep = true;
  CompileResult result = produce ? produce(keep) : run_nvrtc(program, arch, request);
  ++m_counters.cache.compiles;
  result.key = request.key.key.hex();
  result.outcome = Outcome::compiled;
  if (!keep) {
    if (m_remote && !remote_token.empty()) m_remote->release_async(request.key.key, std::move(remote_token));
    return result;
  }
  if (!m_store && !m_config.cache_disabled) ++m_counters.cache.store_failures;  // its folder was refused: not kept
  if (m_store || m_remote) {
    // Serialized once: the local disk first, then the remote, off the request path.
    const std::string bytes = cache::serialize(request.key.key, to_entry(result));
    if (m_store) put_own(request.key.key, bytes);
    send_to_remote(request.key.key, bytes, std::move(remote_token));
  } else if (m_remote && !remote_token.empty()) {
    m_remote->release_async(request.key.key, std::move(remote_token));
  }
  return result;
}

std::optional<std::string> CompileService::find_entry(const cache::Key& key) {
  if (m_store) {
    cache::GetResult g = m_store->get_in_place(key);
    if (g.outcome == cache::GetResult::Outcome::hit) return std::move(g.bytes);
  }
  if (m_remote) {
    cache::RemoteGet r = m_remote->get(key);
    if (r.outcome == cache::RemoteGet::Outcome::hit) {
      if (m_store) backfill(key, r.bytes);
      return std::move(r.bytes);
    }
  }
  return std::nullopt;
}

void CompileService::store_entry(const cache::Key& key, const std::string& bytes) {
  if (m_store) {
    put_own(key, bytes);
    schedule_flush();
  }
  if (m_remote && !m_remote->read_only()) m_remote->put_async(key, bytes);
}

void CompileService::flush() {
  if (m_store) m_store->flush_stats();
}

}  // namespace kjit::request
