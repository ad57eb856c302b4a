#include "core/request/storage.hpp"

#include "core/base/environment.hpp"
#include "core/cache/config.hpp"
#include "core/request/entry_codec.hpp"

#include <fmt/format.h>

#include <chrono>
#include <new>

namespace kjit::request {

Storage::Storage(const RuntimeConfig& config, Counters& counters, Log log, system::Background& background)
    : m_config(config), m_counters(counters), m_log(std::move(log)), m_background(background) {
  m_cache_dir = config.cache_dir.empty() ? base::cache_dir_from_environment() : config.cache_dir.native();
  if (config.cache_disabled) return;
  // Entries are executable code: a folder someone else may write into is not read (the store
  // checks it when it opens it: cache/dir_trust).
  // A folder not made yet is made by the first write (the worker's, for a remote hit).
  auto folder = std::make_shared<cache::StoreFolder>(cache::StoreConfig{
      m_cache_dir, config.cache_max_size,
      config.cache_shared ? cache::DirSharing::group : cache::DirSharing::private_to_user, &m_counters.cache, true});
  if (auto trusted = folder->trusted()) {
    m_store = std::make_unique<cache::Store>(folder);
    m_stats = std::make_unique<cache::StoreStats>(folder);
    m_notes = std::make_unique<cache::StoreNotes>(folder);
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

void Storage::close() {
  m_remote.reset();  // its last writes count into the store's counters, flushed here
  flush();
}

std::string Storage::entry_place(const cache::Key& key) const {
  return m_store ? m_store->entry_file(key) : std::string("not kept (no cache)");
}

Storage::Found Storage::find(const Program& program, const Arch& arch, const PreparedRequest& request) {
  Found found;
  if (m_config.always_compile) return found;
  const cache::Key& key = request.key.key;
  const bool note = m_config.require_hit;  // KJIT_REQUIRE_HIT: why each tier missed
  auto missed = [&](const char* tier, std::string why) {
    if (note) found.missed.push_back({tier, std::move(why)});
  };
  if (m_store && m_pending_count.load(std::memory_order_acquire) != 0) {
    if (std::optional<CompileResult> r = pending(key)) {  // written by the worker soon: a disk hit already
      ++m_counters.cache.hits;
      found.result = std::move(r);
      return found;
    }
  }
  if (m_store) {
    cache::GetResult g = m_store->get_in_place(key);
    switch (g.outcome) {
    case cache::GetResult::Outcome::hit:
      ++m_counters.cache.hits;
      found.result = from_entry(std::move(g), program.name(), arch, request.flags, key);
      return found;
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
    return found;
  }
  cache::RemoteGet remote = m_remote->get(key);
  if (remote.outcome != cache::RemoteGet::Outcome::hit) {
    missed("remote", remote.why);  // each server asked: absent, rejected, down, unreachable
    return found;
  }
  // A remote hit: counted by the tier (remote_hits); the disk's lookup counted nothing.
  found.result = from_remote(std::move(remote), program, arch, request);
  return found;
}

CompileResult Storage::from_remote(cache::RemoteGet&& value, const Program& program, const Arch& arch,
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

void Storage::put_own(const cache::Key& key, std::string_view bytes) {
  cache::PutResult p = m_store->put_bytes(key, bytes, cache::Store::Accounting::deferred);
  note_put(p);
  if (!p.stored) return;
  system::Background::Job job;
  job.run = [this, change = std::move(p.change)] { m_store->account(change); };
  m_background.post(std::move(job));  // dropped: the total drifts until the next recount
}

void Storage::put_later(const cache::Key& key, const CompileResult& result, std::string bytes) {
  {
    std::lock_guard lock(m_pending_mutex);
    auto [it, added] = m_pending.insert_or_assign(key, result);
    it->second.outcome = Outcome::hit;
    if (added) m_pending_count.fetch_add(1, std::memory_order_release);
  }
  auto written = [this, key] {
    std::lock_guard lock(m_pending_mutex);
    if (m_pending.erase(key) != 0) m_pending_count.fetch_sub(1, std::memory_order_release);
  };
  system::Background::Job job;
  job.bytes = bytes.size();
  job.run = [this, key, bytes = std::move(bytes), written] {
    note_put(m_store->put_bytes(key, bytes));
    written();
  };
  job.drop = written;  // not written: the next request of the key makes it again
  m_background.post(std::move(job));
}

std::optional<CompileResult> Storage::pending(const cache::Key& key) {
  std::lock_guard lock(m_pending_mutex);
  if (auto it = m_pending.find(key); it != m_pending.end()) return it->second;
  return std::nullopt;
}

void Storage::forget_pending_in_child() {
  new (&m_pending_mutex) std::mutex();
  m_pending.clear();
  m_pending_count.store(0, std::memory_order_relaxed);
}

void Storage::backfill(const cache::Key& key, std::string bytes) {
  system::Background::Job job;
  job.bytes = bytes.size();
  job.run = [this, key, bytes = std::move(bytes)] { note_put(m_store->put_bytes(key, bytes)); };
  m_background.post(std::move(job));  // dropped: the next process gets a remote hit again
  schedule_flush();
}

void Storage::schedule_flush() {
  if (!m_store || m_flush_queued.exchange(true)) return;
  system::Background::Job job;
  job.run = [this] {
    m_flush_queued = false;
    m_stats->flush(cache::StoreFolder::k_background_lock_wait);  // the destructor's flush catches up
  };
  job.drop = [this] { m_flush_queued = false; };  // the destructor flushes what is left
  m_background.post(std::move(job));
}

void Storage::note_put(const cache::PutResult& p) {
  if (p.stored) return;  // a failed write is counted by the store (store_failures)
  if (!m_warned_store.exchange(true)) {
    m_log(LogLevel::warn, fmt::format("cannot write to the kjit cache in {} ({}); kernels are compiled in memory "
                                      "and not kept", m_cache_dir, p.message));
  }
}

CompileResult Storage::fill(const Program& program, const Arch& arch, const PreparedRequest& request,
                            const Make& make, Fill how) {
  ++m_counters.cache.misses;
  const cache::Key& key = request.key.key;
  if (how == Fill::unlocked) {
    CompileResult r = make_and_store(request, make, {}, Write::by_worker);
    if (m_store) schedule_flush();
    return r;
  }
  if (!m_store) return across_nodes(program, arch, request, make);
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
    CompileResult r = make_and_store(request, make);
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
    return across_nodes(program, arch, request, make);
  }();
  lock->release();
  schedule_flush();
  return r;
}

// Across nodes: the remote lock, taken (when there is a remote one can write) once this process
// is the one on this machine that compiles; or the value another node stored.
CompileResult Storage::across_nodes(const Program& program, const Arch& arch, const PreparedRequest& request,
                                    const Make& make) {
  const cache::Key& key = request.key.key;
  if (!m_remote || m_remote->read_only() || m_config.always_compile) return make_and_store(request, make);
  auto progress = [&](std::chrono::milliseconds waited) {
    m_log(LogLevel::info, fmt::format("waiting {:.1f} s for another node compiling program {} (key {}) via {}",
                                      waited.count() / 1000.0, program.name(), key.hex(),
                                      cache::redact_url(m_config.remote_cache)));
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
      return make_and_store(request, make, lock.token);  // released once sent
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
  return make_and_store(request, make);
}

CompileResult Storage::make_and_store(const PreparedRequest& request, const Make& make, std::string remote_token,
                                      Write write) {
  bool keep = true;
  CompileResult result = make(keep);
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
    std::string bytes = cache::serialize(request.key.key, to_entry(result));
    if (m_remote) m_remote->put_async(request.key.key, bytes, std::move(remote_token));  // a drop is counted
    if (m_store && write == Write::by_worker) {
      put_later(request.key.key, result, std::move(bytes));
    } else if (m_store) {
      put_own(request.key.key, bytes);
    }
  }
  return result;
}

std::optional<std::string> Storage::find_entry(const cache::Key& key) {
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

void Storage::store_entry(const cache::Key& key, const std::string& bytes) {
  if (m_store) {
    put_own(key, bytes);
    schedule_flush();
  }
  if (m_remote && !m_remote->read_only()) m_remote->put_async(key, bytes);
}

void Storage::flush() {
  if (m_stats) m_stats->flush();
}

}  // namespace kjit::request
