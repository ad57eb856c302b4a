#include "core/request/compile_service.hpp"

#include "core/trace/phase.hpp"

#include <kjit/error.hpp>

#include "core/cache/config.hpp"
#include "core/compile/options/arch_resolution.hpp"
#include "core/base/environment.hpp"
#include "core/base/nvrtc_library.hpp"
#include "core/base/toolkit_location.hpp"
#include "core/compile/nvrtc_compiler.hpp"
#include "core/compile/nvrtc/nvrtc_info.hpp"
#include "core/compile/options/option_marshalling.hpp"
#include "core/trace/nvtx.hpp"
#include "core/request/entry_codec.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <new>

namespace kjit::request {

PreparedRequest PreparedRequest::make(const Program& program, const compile::NormalizedOptions& options,
                                      const Arch& arch, compile::FastPath fast) {
  compile::NvrtcCompiler::note_request();  // NVRTC's preparation then leaves its steps after the open out
  std::vector<std::string> flags = compile::marshal(options, arch);
  CacheKey key = CacheKey::compute(program, flags, arch, options->include_dirs, program.directory(), fast);
  return PreparedRequest{std::move(flags), std::move(key)};
}

namespace {

const RuntimeConfig& checked(const RuntimeConfig& config) {
  if (config.require_hit && config.always_compile) {
    throw UsageError("KJIT_REQUIRE_HIT (a miss is an error) and KJIT_ALWAYS_COMPILE (every request compiles) "
                     "contradict each other: set one");
  }
  return config;
}

}  // namespace

CompileService::CompileService(const RuntimeConfig& config, Counters& counters, Log log)
    : m_config(checked(config)), m_counters(counters), m_log(std::move(log)),
      m_storage(config, counters, m_log, m_background) {
  m_fork = system::AtFork::add({[this] {
                                 m_inflight_mutex.lock();
                                 m_storage.lock_pending();
                               },
                               [this] {
                                 m_storage.unlock_pending();
                                 m_inflight_mutex.unlock();
                               },
                               [this] {
                                 // The parent's compiles in flight are its threads', not here: their
                                 // promises are never kept in this process.
                                 new (&m_inflight_mutex) std::mutex();
                                 m_inflight.clear();
                                 m_storage.forget_queued_flush();     // the parent's worker's
                                 m_storage.forget_pending_in_child();  // the parent's worker writes them
                               }});
}

CompileService::~CompileService() {
  // Backfills, usage, remote writes: at most exit_bound more (what is left is dropped, counted).
  m_background.finish(m_background.limits().exit_bound);
  m_storage.close();
}

void CompileService::know_nvrtc() const { (void)base::nvrtc_facts(m_storage.notes()); }

Arch CompileService::resolve(const Arch& arch, std::optional<Device> device) const {
  know_nvrtc();
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
  know_nvrtc();
  // The guess: the device's own arch. An entry exists only if this NVRTC (its version is in the
  // key) compiled for that arch, so a hit needs no check.
  const Arch guess = o->arch.is_native() ? Arch::sm(device.compute_capability()) : o->arch;
  const auto prepared = PreparedRequest::make(program, o, guess, fast_path());
  timer.hashed();
  Storage::Found found = m_storage.find(program, guess, prepared);
  if (found.result) {
    timer.looked_up();
    return finished(program, observed(program, std::move(*found.result)), prepared, true, false, timer);
  }
  const Arch arch = resolve(o->arch, device);
  if (arch == guess) {
    timer.looked_up();
    return finished(program, compile(program, arch, prepared, {}, std::move(found.missed)), prepared, false, false,
                    timer);
  }
  // A device newer than NVRTC (PTX for an older arch): the guess was no request of its own
  // (a lookup counts nothing; the request's outcome is counted once).
  return answer(program, arch, PreparedRequest::make(program, o, arch, fast_path()), {}, timer);
}

CompileResult CompileService::obtain(const Program& program, const compile::NormalizedOptions& o, const Arch& arch) {
  RequestTimer timer(m_config.log_level >= LogLevel::info);
  know_nvrtc();
  const PreparedRequest prepared = PreparedRequest::make(program, o, arch, fast_path());
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
  Storage::Found found = m_storage.find(program, arch, request);
  timer.looked_up();
  if (found.result) {
    return finished(program, observed(program, std::move(*found.result)), request, true, static_cast<bool>(produce),
                    timer);
  }
  return finished(program, compile(program, arch, request, produce, std::move(found.missed)), request, false,
                  static_cast<bool>(produce), timer);
}

CompileResult CompileService::finished(const Program& program, CompileResult r, const PreparedRequest& request,
                                       bool hit, bool produced, const RequestTimer& timer) const {
  const std::string phases = timer.finish(program, r, hit, produced);
  if (m_config.log_level >= LogLevel::info) {  // -v, KJIT_LOG=info: one line a request
    m_log(LogLevel::info, fmt::format("program {} for {}: {}, key {} ({}); entry {}", program.name(), r.arch.str(),
                                      to_string(r.outcome), r.key, phases,
                                      m_storage.entry_place(request.key.key)));
  }
  return r;
}

CompileResult CompileService::observed(const Program& program, CompileResult result) const {
  if (m_hook) m_hook(program, result);
  return result;
}

CompileResult CompileService::compile(const Program& program, const Arch& arch, const PreparedRequest& request,
                                      const Producer& produce, std::vector<CacheMissError::Tier> missed) {
  if (m_config.require_hit) refuse_miss(program, request, std::move(missed));
  return observed(program, compile_once(program, arch, request, produce));
}

void CompileService::refuse_miss(const Program& program, const PreparedRequest& request,
                                 std::vector<CacheMissError::Tier> tiers) const {
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
    // A producer (a link) costs less than the locks that would make it run once: unlocked.
    CompileResult r = m_storage.fill(
        program, arch, request, [&](bool& keep) { return produce ? produce(keep) : run_nvrtc(program, arch, request); },
        produce ? Storage::Fill::unlocked : Storage::Fill::once);
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

CompileResult CompileService::run_nvrtc(const Program& program, const Arch& arch, const PreparedRequest& request) {
  const std::vector<std::string>& flags = request.flags;
  trace::nvtx::Range range("compile", program.name());
  trace::PhaseScope phase;
  const system::AtFork::Busy busy;  // a fork waits for NVRTC (its locks and once-initialisations)
  base::load_nvrtc_builtins();     // beside the libnvrtc in use, wherever its toolkit is
  compile::NvrtcOutput out;
  const compile::FastPath fast = fast_path();
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
                                   compile::NvrtcInfo::version(), fmt::join(flags, " "), out.result.log,
                                   excerpt.empty() ? "" : "\nsource:\n", excerpt));
  }
  return std::move(out.result);
}

std::optional<std::string> CompileService::find_entry(const cache::Key& key) { return m_storage.find_entry(key); }

void CompileService::store_entry(const cache::Key& key, const std::string& bytes) { m_storage.store_entry(key, bytes); }

}  // namespace kjit::request
