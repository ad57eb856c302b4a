#include "runtime/request/compile_service.hpp"

#include <kjit/error.hpp>

#include "cache/config.hpp"
#include "cache/lock_heartbeat.hpp"
#include "runtime/compile/nvrtc_compiler.hpp"
#include "runtime/compile/option_marshalling.hpp"
#include "runtime/driver/nvtx.hpp"
#include "runtime/request/entry_codec.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kjit::request {

PreparedRequest PreparedRequest::make(const Program& program, const CompileOptions& options, const Arch& arch) {
  std::vector<std::string> flags = compile::marshal(options, arch);
  CacheKey key = CacheKey::compute(program, flags, arch, options.include_dirs, program.directory());
  return PreparedRequest{std::move(flags), std::move(key)};
}

CompileService::CompileService(const RuntimeConfig& config, Counters& counters, Log log)
    : m_config(config), m_counters(counters), m_log(std::move(log)) {
  m_cache_dir = config.cache_dir.empty() ? cache::default_cache_dir() : config.cache_dir.native();
  if (!config.cache_disabled) {
    m_store = std::make_unique<cache::Store>(cache::StoreConfig{m_cache_dir, config.cache_max_size});
  }
}

CompileResult CompileService::observed(const Program& program, CompileResult result) const {
  if (m_hook) m_hook(program, result);
  return result;
}

std::optional<CompileResult> CompileService::find(const Program& program, const Arch& arch,
                                                  const PreparedRequest& request) {
  if (!m_store || m_config.always_compile) return std::nullopt;
  const cache::Key& key = request.key.key;
  cache::GetResult g = m_store->get_in_place(key);
  switch (g.outcome) {
  case cache::GetResult::Outcome::hit:
    ++m_counters.disk_hits;
    return observed(program, from_entry(std::move(g), program.name(), arch, request.flags, key));
  case cache::GetResult::Outcome::damaged:
    ++m_counters.damaged;
    m_log(LogLevel::warn, fmt::format("cache entry for program {} (key {}) was damaged and is recompiled: {}",
                                      program.name(), key.hex(), g.message));
    return std::nullopt;
  case cache::GetResult::Outcome::error:
    m_log(LogLevel::warn, fmt::format("reading the cache entry for program {} (key {}): {}", program.name(),
                                      key.hex(), g.message));
    return std::nullopt;
  case cache::GetResult::Outcome::miss: return std::nullopt;
  }
  return std::nullopt;
}

void CompileService::forget_miss() {
  if (m_store && !m_config.always_compile) m_store->stats().misses.fetch_sub(1, std::memory_order_relaxed);
}

CompileResult CompileService::get(const Program& program, const Arch& arch, const PreparedRequest& request) {
  if (auto hit = find(program, arch, request)) return std::move(*hit);
  return compile(program, arch, request);
}

CompileResult CompileService::compile(const Program& program, const Arch& arch, const PreparedRequest& request) {
  return observed(program, compile_once(program, arch, request));
}

CompileResult CompileService::compile_once(const Program& program, const Arch& arch, const PreparedRequest& request) {
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
    ++m_counters.waits;
    CompileResult r = future.get();  // rethrows the compiler's error
    r.outcome = Outcome::waited;
    return r;
  }
  try {
    CompileResult r = compile_across_processes(program, arch, request);
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
                                                       const PreparedRequest& request) {
  ++m_counters.misses;
  if (!m_store) return run_nvrtc(program, arch, request);
  const cache::Key& key = request.key.key;
  auto progress = [&](std::chrono::milliseconds waited) {
    m_log(LogLevel::info, fmt::format("waiting {:.1f} s for another process compiling program {} (key {})",
                                      waited.count() / 1000.0, program.name(), key.hex()));
  };
  auto lock = m_store->lock(key, m_config.lock_timeout, progress, m_config.wait_progress_every,
                            m_config.lock_stale_after);
  if (!lock) {
    // The message says which: the wait bound passed (timed out) or locking failed.
    m_log(lock.error().reason == cache::Failure::Reason::stalled ? LogLevel::warn : LogLevel::info,
          fmt::format("compiling program {} (key {}) without the cache lock: {}", program.name(),
                                      key.hex(), lock.error().message));
    CompileResult r = run_nvrtc(program, arch, request);
    flush();
    return r;
  }
  if (!m_config.always_compile) {
    // Another process may have compiled it while this one waited for the lock.
    cache::GetResult g = m_store->get_in_place(key);
    if (g.outcome == cache::GetResult::Outcome::hit) {
      ++m_counters.waits;
      m_store->stats().waits.fetch_add(1, std::memory_order_relaxed);
      CompileResult r = from_entry(std::move(g), program.name(), arch, request.flags, key);
      r.outcome = Outcome::waited;
      return r;
    }
    // The re-check under the lock is part of the same request: one miss, not two.
    m_store->stats().misses.fetch_sub(1, std::memory_order_relaxed);
  }
  CompileResult r = [&] {
    cache::LockHeartbeat heartbeat(lock->fd());  // waiters see this process working
    return run_nvrtc(program, arch, request);
  }();
  lock->release();
  flush();
  return r;
}

CompileResult CompileService::run_nvrtc(const Program& program, const Arch& arch, const PreparedRequest& request) {
  const std::vector<std::string>& flags = request.flags;
  driver::nvtx::Range range("compile", program.name());
  compile::NvrtcOutput out;
  if (m_config.precompiled_headers) {
    auto lease = m_pch.acquire();
    out = compile::NvrtcCompiler::compile(program, flags, arch, lease.dir());
  } else {
    out = compile::NvrtcCompiler::compile(program, flags, arch);
  }
  if (!out.succeeded) {
    std::string excerpt = compile::source_excerpt(program.name(), program.source(), out.result.log);
    throw CompileError(program.name(), flags, out.result.log, excerpt,
                       fmt::format("compiling program {} with NVRTC {} ({}) failed:\n{}{}{}", program.name(),
                                   compile::NvrtcCompiler::version(), fmt::join(flags, " "), out.result.log,
                                   excerpt.empty() ? "" : "\nsource:\n", excerpt));
  }
  ++m_counters.compiles;
  out.result.key = request.key.key.hex();
  out.result.outcome = Outcome::compiled;
  if (m_store) {
    m_store->stats().compiles.fetch_add(1, std::memory_order_relaxed);
    cache::PutResult p = m_store->put(request.key.key, to_entry(out.result));
    if (!p.stored) {
      ++m_counters.store_failures;
      if (!m_warned_store.exchange(true)) {
        m_log(LogLevel::warn, fmt::format("cannot write to the kjit cache in {} ({}); kernels are compiled in memory "
                                          "and not kept", m_cache_dir, p.message));
      }
    }
  }
  return std::move(out.result);
}

void CompileService::flush() {
  if (m_store) m_store->flush_stats();
}

}  // namespace kjit::request
