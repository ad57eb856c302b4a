#include "cache/remote/remote_tier.hpp"

#include "cache/config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <new>
#include <random>
#include <unistd.h>

namespace kjit::cache {
namespace {

constexpr std::string_view k_signed_magic = "KJSG";

std::string value_name(const Key& key) { return "kjit:" + key.hex(); }
std::string lock_name(const Key& key) { return "kjit:lock:" + key.hex(); }

std::int64_t now_ticks() { return std::chrono::steady_clock::now().time_since_epoch().count(); }

std::string new_token() {
  std::random_device rd;
  return fmt::format("{}:{:08x}{:08x}{:08x}", ::getpid(), rd(), rd(), rd());
}

void add(std::atomic<std::uint64_t>& counter, std::uint64_t n) { counter.fetch_add(n, std::memory_order_relaxed); }

}  // namespace

// One server of the level: its connections and its health in this process.
struct RemoteTier::Shard {
  RemoteListEntry spec;
  std::mutex request_mutex;  // the request path's connection
  std::unique_ptr<RemoteStore> request;
  std::unique_ptr<RemoteStore> writer;  // the Background thread's own connection, opened on first use
  std::atomic<unsigned> failures{0};
  std::atomic<std::int64_t> down_until{0};  // steady_clock ticks
  std::atomic<bool> down{false};
  std::atomic<unsigned> refusals{0};  // writes refused in a row
  std::atomic<std::int64_t> refusing_until{0};
  std::atomic<bool> refusing{false};
};

Result<std::unique_ptr<RemoteTier>> RemoteTier::open(RemoteConfig config, Stats& stats, Log log,
                                                     Background* background) {
  // Durations that do not fit a clock or a Redis expiry saturate (cache::k_max_duration).
  for (std::chrono::milliseconds* d : {&config.timeouts.connect, &config.timeouts.reply, &config.ttl, &config.lock_ttl,
                                       &config.poll_every, &config.backoff}) {
    *d = saturate_duration(*d);
  }
  auto list = parse_remote_list(config.url);
  if (!list) return list.error();
  if (!list->levels.empty()) {
    return Failure{fmt::format("remote cache \"{}\" is an HTTP store: a level of its own, not a shard of a Redis "
                               "level, and not supported by this kjit yet (give redis:// or unix:// shards)",
                               list->levels.front().name)};
  }
  if (list->shards.empty()) return Failure{"no remote cache address (expected redis://host[:port] or unix:///path)"};
  std::vector<std::unique_ptr<Shard>> shards;
  for (RemoteListEntry& entry : list->shards) {
    auto store = open_remote_store(entry.url, config.timeouts);
    if (!store) return store.error();
    auto shard = std::make_unique<Shard>();
    shard->spec = std::move(entry);
    shard->request = std::move(*store);
    shards.push_back(std::move(shard));
  }
  return std::unique_ptr<RemoteTier>(
      new RemoteTier(std::move(config), std::move(shards), stats, std::move(log), background));
}

RemoteTier::RemoteTier(RemoteConfig config, std::vector<std::unique_ptr<Shard>> shards, Stats& stats, Log log,
                       Background* background)
    : m_config(std::move(config)),
      m_stats(stats),
      m_log(std::move(log)),
      m_shards(std::move(shards)),
      m_own_background(background == nullptr ? std::make_unique<Background>() : nullptr),
      m_background(background == nullptr ? m_own_background.get() : background) {
  for (const auto& shard : m_shards) m_ring.push_back({shard->spec.name, shard->spec.weight});
  m_fork = AtFork::add({[this] {
                          for (auto& shard : m_shards) shard->request_mutex.lock();
                          m_pending_mutex.lock();
                        },
                        [this] {
                          m_pending_mutex.unlock();
                          for (auto& shard : m_shards) shard->request_mutex.unlock();
                        },
                        [this] {
                          new (&m_pending_mutex) std::mutex();
                          new (&m_pending_cv) std::condition_variable();
                          // The parent's connections, writes and locks are the parent's: forgotten
                          // here (never closed, written to nor released), a new connection opened
                          // on first use (open_remote_store connects lazily).
                          for (auto& shard : m_shards) {
                            new (&shard->request_mutex) std::mutex();
                            if (auto fresh = open_remote_store(shard->spec.url, m_config.timeouts)) {
                              (void)shard->request.release();
                              shard->request = std::move(*fresh);
                            }
                            (void)shard->writer.release();
                          }
                          (void)new auto(std::move(m_held));
                          m_held.clear();
                          m_pending = 0;
                          m_pending_bytes = 0;
                        }});
}

RemoteTier::~RemoteTier() {
  if (m_own_background) {
    m_own_background->finish(m_own_background->limits().exit_bound);
  } else {
    m_background->forget(this);
  }
  std::map<std::string, Background::Recurring> held;
  {
    std::lock_guard lock(m_pending_mutex);
    held.swap(m_held);
  }
  held.clear();  // no refresh runs past here
}

std::size_t RemoteTier::shard_of(const Key& key) const { return rendezvous_shard(key, m_ring); }

std::vector<RemoteShardState> RemoteTier::shards() const {
  std::vector<RemoteShardState> out;
  for (const auto& shard : m_shards) {
    out.push_back({shard->spec.name, shard->spec.weight, !available(*shard), available(*shard) && !writable(*shard)});
  }
  return out;
}

bool RemoteTier::available(const Shard& shard) const {
  const std::int64_t until = shard.down_until.load(std::memory_order_relaxed);
  return until == 0 || now_ticks() >= until;
}

bool RemoteTier::writable(const Shard& shard) const {
  const std::int64_t until = shard.refusing_until.load(std::memory_order_relaxed);
  return available(shard) && (until == 0 || now_ticks() >= until);
}

std::string RemoteTier::skipped_message(const Shard& shard) const {
  return fmt::format("remote cache {} is skipped after repeated failures", shard.spec.name);
}

template <class T>
bool RemoteTier::record(Shard& shard, const Result<T>& r, Call call) {
  const auto backoff_ticks =
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(m_config.backoff).count();
  const std::string_view others = m_shards.size() > 1 ? "; the other shards are still used" : "";
  if (r) {
    shard.failures.store(0, std::memory_order_relaxed);
    shard.down_until.store(0, std::memory_order_relaxed);
    if (shard.down.exchange(false) && m_log) {
      m_log(Severity::info, fmt::format("remote cache {} answers again; using it", shard.spec.name));
    }
    if (call == Call::write) {
      shard.refusals.store(0, std::memory_order_relaxed);
      shard.refusing_until.store(0, std::memory_order_relaxed);
      if (shard.refusing.exchange(false) && m_log) {
        m_log(Severity::info, fmt::format("remote cache {} takes writes again", shard.spec.name));
      }
    }
    return true;
  }
  add(m_stats.remote_errors, 1);
  if (r.error().reason == Failure::Reason::refused) {
    // The server answered: it is up and serves reads. Only its writes (and locks) pause.
    const unsigned refusals = shard.refusals.fetch_add(1, std::memory_order_relaxed) + 1;
    if (refusals >= m_config.failures_before_backoff) {
      shard.refusing_until.store(now_ticks() + backoff_ticks, std::memory_order_relaxed);
      if (!shard.refusing.exchange(true) && m_log) {
        m_log(Severity::warning,
              fmt::format("{}; after {} refused writes in a row, writes to remote cache {} are skipped for {} s (it "
                          "still serves reads)",
                          r.error().message, refusals, shard.spec.name, m_config.backoff.count() / 1000.0));
      }
    }
    return false;
  }
  if (r.error().timed_out()) add(m_stats.remote_timeouts, 1);
  const unsigned failures = shard.failures.fetch_add(1, std::memory_order_relaxed) + 1;
  if (failures >= m_config.failures_before_backoff) {
    shard.down_until.store(now_ticks() + backoff_ticks, std::memory_order_relaxed);
    if (!shard.down.exchange(true) && m_log) {
      m_log(Severity::warning,
            fmt::format("{}; after {} failures in a row the remote cache {} is skipped for {} s (its kernels come from "
                        "the local cache or are compiled{})",
                        r.error().message, failures, shard.spec.name, m_config.backoff.count() / 1000.0, others));
    }
  }
  return false;
}

std::string RemoteTier::encode(std::string entry_bytes) const {
  if (!m_config.signer) return entry_bytes;
  std::string out;
  out.reserve(k_signed_magic.size() + Signer::k_tag_size + entry_bytes.size());
  out += k_signed_magic;
  out += m_config.signer->tag(entry_bytes);
  out += entry_bytes;
  return out;
}

RemoteGet RemoteTier::fetch(Shard& shard, const Key& key) {
  RemoteGet out;
  out.shard = shard.spec.name;
  if (!available(shard)) {
    out.outcome = RemoteGet::Outcome::unavailable;
    out.shard_down = true;
    out.message = skipped_message(shard);
    return out;
  }
  // A value is at most max_value_size, plus a signature's head: a longer one is refused from its
  // length, never read (a hostile value of 400 MB costs nothing), and counted as rejected.
  constexpr std::uint64_t signature = k_signed_magic.size() + Signer::k_tag_size;
  const std::uint64_t max_size =
      m_config.max_value_size > UINT64_MAX - signature ? UINT64_MAX : m_config.max_value_size + signature;
  Result<std::optional<std::string>> r = [&] {
    std::lock_guard lock(shard.request_mutex);
    return shard.request->get(value_name(key), max_size);
  }();
  if (!r && r.error().reason == Failure::Reason::too_large) {
    add(m_stats.remote_rejected, 1);
    out.outcome = RemoteGet::Outcome::rejected;
    out.message = fmt::format("the value for key {} in remote cache {} is not loaded: {}", key.hex(), shard.spec.name,
                              r.error().message);
    return out;
  }
  if (!record(shard, r)) {
    out.outcome = RemoteGet::Outcome::unavailable;
    out.message = r.error().message;
    return out;
  }
  if (!r->has_value()) return out;  // miss
  std::string value = std::move(**r);
  add(m_stats.remote_bytes_read, value.size());
  auto reject = [&](std::string why) {
    add(m_stats.remote_rejected, 1);
    out.outcome = RemoteGet::Outcome::rejected;
    out.message = fmt::format("the value for key {} in remote cache {} is not loaded: {}", key.hex(),
                              shard.spec.name, why);
    return out;
  };
  const bool is_signed = std::string_view(value).substr(0, k_signed_magic.size()) == k_signed_magic;
  if (m_config.signer) {
    if (!is_signed) return reject("it carries no signature, and this process requires one (KJIT_REMOTE_SECRET_FILE)");
    const std::size_t head = k_signed_magic.size() + Signer::k_tag_size;
    if (value.size() < head) return reject("truncated signature");
    const std::string_view tag = std::string_view(value).substr(k_signed_magic.size(), Signer::k_tag_size);
    if (!m_config.signer->verify(tag, std::string_view(value).substr(head))) {
      return reject("its signature is not valid for this fleet's secret (damaged, or written by someone without it)");
    }
    value.erase(0, head);
  } else if (is_signed) {
    return reject("it is signed, and this process has no secret to check it with (set KJIT_REMOTE_SECRET_FILE)");
  }
  InPlaceParse parsed = parse_in_place(value);
  if (!parsed.error.empty()) return reject("damaged: " + parsed.error);
  if (parsed.key != key) {
    return reject(fmt::format("it records key {} (a value stored under another name)", parsed.key.hex()));
  }
  out.outcome = RemoteGet::Outcome::hit;
  out.bytes = std::move(value);
  out.sections = std::move(parsed.sections);
  return out;
}

RemoteGet RemoteTier::get(const Key& key) {
  Shard& shard = shard_for(key);
  if (!available(shard)) {
    // Skipped during its back-off: no request is made; a miss, never an error nor another shard.
    add(m_stats.remote_misses, 1);
    add(m_stats.remote_shard_down, 1);
    RemoteGet g;
    g.outcome = RemoteGet::Outcome::unavailable;
    g.shard = shard.spec.name;
    g.shard_down = true;
    g.message = skipped_message(shard);
    return g;
  }
  const auto start = std::chrono::steady_clock::now();
  RemoteGet g = fetch(shard, key);
  add(m_stats.remote_requests, 1);
  add(m_stats.remote_latency_us, static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                                std::chrono::steady_clock::now() - start)
                                                                .count()));
  add(g.outcome == RemoteGet::Outcome::hit ? m_stats.remote_hits : m_stats.remote_misses, 1);
  if (g.outcome == RemoteGet::Outcome::rejected && m_log) m_log(Severity::warning, g.message);
  return g;
}

RemoteLock RemoteTier::lock_or_wait(const Key& key, std::chrono::milliseconds timeout,
                                    std::chrono::milliseconds progress_every,
                                    const std::function<void(std::chrono::milliseconds)>& progress) {
  RemoteLock out;
  if (m_config.read_only) {
    out.message = "the remote cache is read-only here";
    return out;
  }
  Shard& shard = shard_for(key);
  timeout = saturate_duration(timeout);
  progress_every = saturate_duration(progress_every);
  const auto start = std::chrono::steady_clock::now();
  auto next_progress = start + progress_every;
  const std::string name = lock_name(key);
  std::string token = new_token();
  std::chrono::milliseconds pause = std::min(std::chrono::milliseconds(2), m_config.poll_every);
  for (;;) {
    if (!available(shard)) {
      out.message = skipped_message(shard);
      return out;
    }
    if (!writable(shard)) {  // a full server takes no lock either: compile without one
      out.message = fmt::format("remote cache {} refuses writes", shard.spec.name);
      return out;
    }
    Result<bool> taken = [&] {
      std::lock_guard lock(shard.request_mutex);
      return shard.request->try_lock(name, token, m_config.lock_ttl);
    }();
    if (!record(shard, taken, Call::write)) {
      out.message = taken.error().message;
      return out;
    }
    if (*taken) {
      // The holder before this one may have stored the value just before letting go.
      RemoteGet g = fetch(shard, key);
      if (g.outcome == RemoteGet::Outcome::hit) {
        release_async(key, token);
        add(m_stats.remote_hits, 1);
        out.outcome = RemoteLock::Outcome::value;
        out.value = std::move(g);
        return out;
      }
      // Refreshed on the Background thread before it expires, until its release.
      // (A lock_ttl of a few ms given through the API must not make the worker spin.)
      const auto every = std::max(m_config.lock_ttl / 3, std::chrono::milliseconds(1));
      Background::Recurring refresh = m_background->every(every, [this, &shard, name, token] {
        if (RemoteStore* writer = writer_store(shard); writer != nullptr && available(shard)) {
          record(shard, writer->refresh_lock(name, token, m_config.lock_ttl));
        }
      });
      {
        std::lock_guard lock(m_pending_mutex);
        m_held[token] = std::move(refresh);
      }
      out.outcome = RemoteLock::Outcome::acquired;
      out.token = std::move(token);
      return out;
    }
    RemoteGet g = fetch(shard, key);
    if (g.outcome == RemoteGet::Outcome::hit) {
      add(m_stats.remote_hits, 1);
      out.outcome = RemoteLock::Outcome::value;
      out.value = std::move(g);
      return out;
    }
    if (g.outcome == RemoteGet::Outcome::unavailable) {
      out.message = g.message;
      return out;
    }
    const auto now = std::chrono::steady_clock::now();
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - start);
    if (waited >= timeout) {
      out.outcome = RemoteLock::Outcome::timed_out;
      out.message = fmt::format("waited {:.1f} s for another node compiling key {} (lock {} on remote cache {})",
                                waited.count() / 1000.0, key.hex(), name, shard.spec.name);
      return out;
    }
    if (progress && now >= next_progress) {
      progress(waited);
      next_progress = now + progress_every;
    }
    // Poll soon at first (most compiles take tens of milliseconds), then every poll_every.
    std::this_thread::sleep_for(std::min(pause, timeout - waited));
    pause = std::min(pause * 2, m_config.poll_every);
  }
}

bool RemoteTier::put_async(const Key& key, std::string entry_bytes, std::string token) {
  const std::uint64_t size = entry_bytes.size();
  bool fits = false;
  {
    std::lock_guard lock(m_pending_mutex);
    fits = !m_config.read_only && size <= m_config.max_value_size && m_pending < m_config.queue_capacity &&
           m_pending_bytes + size <= m_config.queue_max_bytes && writable(shard_for(key));
    if (!fits && token.empty()) {
      if (!m_config.read_only) add(m_stats.remote_dropped, 1);
      return false;
    }
    ++m_pending;
    m_pending_bytes += fits ? size : 0;
  }
  if (!fits) {
    if (!m_config.read_only) add(m_stats.remote_dropped, 1);
    entry_bytes.clear();  // the lock is released all the same: a release is small, and never dropped
  }
  const bool sends = fits;
  const std::uint64_t held = fits ? size : 0;
  Background::Job job;
  job.bytes = held;
  job.owner = this;
  job.run = [this, key, value = std::move(entry_bytes), token, held]() mutable {
    write(key, std::move(value), token);
    done(held);
  };
  job.drop = [this, sends, held] {
    if (sends) add(m_stats.remote_dropped, 1);
    done(held);
  };
  const bool posted = m_background->post(std::move(job));
  if (!posted && !token.empty()) {
    std::lock_guard lock(m_pending_mutex);
    m_held.erase(token);  // not released: it expires after lock_ttl
  }
  return posted && sends;
}

void RemoteTier::release_async(const Key& key, std::string token) {
  if (token.empty()) return;
  {
    std::lock_guard lock(m_pending_mutex);
    ++m_pending;
  }
  Background::Job job;
  job.owner = this;
  job.run = [this, key, token] {
    write(key, {}, token);
    done(0);
  };
  job.drop = [this] { done(0); };
  if (!m_background->post(std::move(job))) {
    std::lock_guard lock(m_pending_mutex);
    m_held.erase(token);
  }
}

void RemoteTier::done(std::uint64_t bytes) {
  {
    std::lock_guard lock(m_pending_mutex);
    --m_pending;
    m_pending_bytes -= bytes;
  }
  m_pending_cv.notify_all();
}

void RemoteTier::drain() {
  std::unique_lock lock(m_pending_mutex);
  m_pending_cv.wait(lock, [&] { return m_pending == 0; });
}

Result<std::string> RemoteTier::ping() {
  std::string answers;
  for (auto& shard : m_shards) {
    Result<std::string> r = [&] {
      std::lock_guard lock(shard->request_mutex);
      return shard->request->ping();
    }();
    record(*shard, r);
    if (!r) return r;
    answers += (answers.empty() ? "" : ", ") + *r;
  }
  return answers;
}

RemoteStore* RemoteTier::writer_store(Shard& shard) {
  if (!shard.writer) {
    if (auto s = open_remote_store(shard.spec.url, m_config.timeouts)) shard.writer = std::move(*s);
  }
  return shard.writer.get();
}

void RemoteTier::write(const Key& key, std::string value, const std::string& token) {
  Shard& shard = shard_for(key);
  RemoteStore* writer = writer_store(shard);
  if (writer != nullptr && !value.empty()) {
    if (writable(shard)) {
      const std::size_t size = value.size();
      std::string encoded = encode(std::move(value));
      if (record(shard, writer->put(value_name(key), encoded, m_config.ttl), Call::write)) {
        add(m_stats.remote_writes, 1);
        add(m_stats.remote_bytes_written, size);
      }
    } else {
      add(m_stats.remote_dropped, 1);
    }
  }
  if (token.empty()) return;
  if (writer != nullptr && available(shard)) record(shard, writer->unlock(lock_name(key), token));
  Background::Recurring refresh;
  {
    std::lock_guard lock(m_pending_mutex);
    if (auto it = m_held.find(token); it != m_held.end()) {
      refresh = std::move(it->second);
      m_held.erase(it);
    }
  }
  // `refresh` stops here (on the Background thread: at once).
}

}  // namespace kjit::cache
