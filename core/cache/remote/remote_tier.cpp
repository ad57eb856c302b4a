#include "core/system/units.hpp"
#include "core/cache/remote/remote_tier.hpp"

#include "core/cache/config.hpp"
#include "core/cache/remote/remote_backend.hpp"
#include "core/cache/remote/remote_list.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <new>
#include <random>
#include <thread>
#include <unistd.h>

namespace kjit::cache {
namespace {

std::string value_name(const Key& key) { return "kjit:" + key.hex(); }
std::string lock_name(const Key& key) { return "kjit:lock:" + key.hex(); }

std::string new_token() {
  std::random_device rd;
  return fmt::format("{}:{:08x}{:08x}{:08x}", ::getpid(), rd(), rd(), rd());
}

void add(std::atomic<std::uint64_t>& counter, std::uint64_t n) { counter.fetch_add(n, std::memory_order_relaxed); }

// A write names its levels as bits of one word.
constexpr std::size_t k_max_levels = 64;
std::uint64_t all_levels(std::size_t n) { return n >= 64 ? ~0ull : (1ull << n) - 1; }

}  // namespace

system::Result<std::unique_ptr<RemoteTier>> RemoteTier::open(RemoteConfig config, Stats& stats, Log log,
                                                             system::Background* background) {
  // Durations that do not fit a clock or a Redis expiry saturate (system::k_max_duration).
  for (std::chrono::milliseconds* d : {&config.timeouts.connect, &config.timeouts.reply, &config.ttl, &config.lock_ttl,
                                       &config.poll_every, &config.backoff}) {
    *d = system::saturate_duration(*d);
  }
  // A node that can only check signatures (ed25519 public keys) must never write: what it sent
  // would be refused by every node, itself included.
  if (config.signer && !config.signer->can_sign()) config.read_only = true;
  auto list = parse_remote_list(config.url);
  if (!list) return list.error();
  if (list->shards.empty() && list->levels.empty()) {
    return system::Failure{fmt::format("no remote cache address (expected {})", remote_backend_forms())};
  }
  RemoteOpenOptions options{config.timeouts, {}};
  if (!config.http_auth_file.empty()) {
    auto c = read_http_credentials(config.http_auth_file);
    if (!c) return c.error();
    options.http = std::move(*c);
  }
  if (list->shards.size() + list->levels.size() > k_max_levels) {
    return system::Failure{fmt::format("remote cache list \"{}\": more than {} servers", redact_url(config.url), k_max_levels)};
  }
  std::vector<std::unique_ptr<RemoteLevel>> levels;
  for (const std::vector<RemoteListEntry>* group : {&list->shards, &list->levels}) {
    for (const RemoteListEntry& entry : *group) {
      auto store = open_remote_store(entry.url, options);
      if (!store) return store.error();
      levels.push_back(std::make_unique<RemoteLevel>(entry, *remote_backend_of(entry.url), options, std::move(*store)));
    }
  }
  const std::size_t shards = list->shards.size();
  return std::unique_ptr<RemoteTier>(
      new RemoteTier(std::move(config), std::move(levels), shards, stats, std::move(log), background));
}

RemoteTier::RemoteTier(RemoteConfig config, std::vector<std::unique_ptr<RemoteLevel>> levels, std::size_t shards,
                       Stats& stats, Log log, system::Background* background)
    : m_config(std::move(config)),
      m_shown_url(redact_url(m_config.url)),
      m_stats(stats),
      m_log(std::move(log)),
      m_levels(std::move(levels)),
      m_shards(shards),
      m_queue(background, {m_config.queue_capacity, m_config.queue_max_bytes}) {
  for (std::size_t i = 0; i < m_shards; ++i) m_ring.push_back({m_levels[i]->name(), m_levels[i]->weight()});
  m_fork = system::AtFork::add({[this] {
                                  for (auto& level : m_levels) level->lock_for_fork();
                                  m_queue.lock_for_fork();
                                },
                                [this] {
                                  m_queue.unlock_after_fork();
                                  for (auto& level : m_levels) level->unlock_after_fork();
                                },
                                [this] {
                                  // The parent's connections, writes and locks are the parent's:
                                  // forgotten here (never closed, written to nor released).
                                  m_queue.reset_in_child();
                                  for (auto& level : m_levels) level->reset_in_child();
                                }});
}

RemoteTier::~RemoteTier() { m_queue.stop(); }

std::size_t RemoteTier::shard_of(const Key& key) const { return rendezvous_shard(key, m_ring); }

std::uint64_t RemoteTier::levels_of(const Key& key) const {
  std::uint64_t mine = all_levels(m_levels.size()) & ~all_levels(m_shards);  // the levels after the shards
  if (m_shards > 0) mine |= 1ull << shard_of(key);
  return mine;
}

RemoteLevel* RemoteTier::lock_level(const Key& key) const {
  // The key's shard when its backend has locks, else the first level that has them.
  if (m_shards > 0 && m_levels[shard_of(key)]->backend().can.locks) return m_levels[shard_of(key)].get();
  for (std::size_t i = m_shards; i < m_levels.size(); ++i) {
    if (m_levels[i]->backend().can.locks) return m_levels[i].get();
  }
  return nullptr;
}

std::vector<RemoteShardState> RemoteTier::shards() const {
  std::vector<RemoteShardState> out;
  for (std::size_t i = 0; i < m_shards; ++i) {
    const RemoteLevel& l = *m_levels[i];
    out.push_back({l.name(), l.weight(), !l.available(), l.available() && !l.writable()});
  }
  return out;
}

template <class T>
bool RemoteTier::record(RemoteLevel& level, const system::Result<T>& r, RemoteLevel::Call call) {
  const RemoteLevel::Outcome o = level.record(r ? nullptr : &r.error(), call,
                                              {m_config.failures_before_backoff, m_config.backoff});
  if (o.came_back && m_log) m_log(Severity::info, fmt::format("remote cache {} answers again; using it", level.name()));
  if (o.takes_writes && m_log) m_log(Severity::info, fmt::format("remote cache {} takes writes again", level.name()));
  if (o.ok) return true;
  add(m_stats.remote_errors, 1);
  if (level.backend().over_http) add(m_stats.remote_http_errors, 1);
  if (r.error().reason == system::Failure::Reason::refused) {
    if (o.began_refusing && m_log) {
      m_log(Severity::warning,
            fmt::format("{}; after {} refused writes in a row, writes to remote cache {} are skipped for {} s (it "
                        "still serves reads)",
                        r.error().message, o.in_row, level.name(), m_config.backoff.count() / 1000.0));
    }
    return false;
  }
  if (r.error().timed_out()) add(m_stats.remote_timeouts, 1);
  if (o.went_down && m_log) {
    const bool shard = level.backend().place == RemotePlace::shard;
    m_log(Severity::warning,
          fmt::format("{}; after {} failures in a row the remote cache {} is skipped for {} s (its kernels come "
                      "from the other levels, the local cache or are compiled{})",
                      r.error().message, o.in_row, level.name(), m_config.backoff.count() / 1000.0,
                      m_shards > 1 && shard ? "; the other shards are still used" : ""));
  }
  return false;
}

void RemoteTier::tell_signed_without_key(const RemoteLevel& level, std::string_view detail) {
  if (!m_log) return;
  if (m_told_signed.exchange(true)) {
    m_log(Severity::info, detail);
    return;
  }
  m_log(Severity::warning,
        fmt::format("remote cache {} holds signed values and this process has no key: it cannot load them (set "
                    "KJIT_REMOTE_PUBLIC_KEY_FILE for the fleet's ed25519 keys, or KJIT_REMOTE_SECRET_FILE for its "
                    "HMAC secret) and its unsigned writes never replace them (said once; {})",
                    level.name(), detail));
}

std::string RemoteTier::encode(std::string entry_bytes) const {
  return seal_value(m_config.signer ? &*m_config.signer : nullptr, std::move(entry_bytes));
}

RemoteGet RemoteTier::fetch(RemoteLevel& level, const Key& key) {
  RemoteGet out;
  if (!level.available()) {
    out.outcome = RemoteGet::Outcome::unavailable;
    out.message = fmt::format("remote cache {} is skipped after repeated failures", level.name());
    return out;
  }
  // A value is at most max_value_size, plus a signature's head: a longer one is refused from its
  // length, never read (a hostile value of 400 MB costs nothing), and counted as rejected.
  constexpr std::uint64_t signature = k_max_value_head;
  const std::uint64_t max_size =
      m_config.max_value_size > UINT64_MAX - signature ? UINT64_MAX : m_config.max_value_size + signature;
  system::Result<std::optional<std::string>> r =
      level.ask([&](RemoteStore& store) { return store.get(value_name(key), max_size); });
  if (!r && r.error().reason == system::Failure::Reason::too_large) {
    add(m_stats.remote_rejected, 1);
    out.outcome = RemoteGet::Outcome::rejected;
    out.message = fmt::format("the value for key {} in remote cache {} is not loaded: {}", key.hex(), level.name(),
                              r.error().message);
    return out;
  }
  if (!record(level, r)) {
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
                              level.name(), why);
    return out;
  };
  const system::Result<std::size_t> head = open_value(m_config.signer ? &*m_config.signer : nullptr, value);
  if (!head) {
    out.signed_without_key = !m_config.signer && is_signed_value(value);
    return reject(head.error().message);
  }
  value.erase(0, *head);
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
  const std::uint64_t mine = levels_of(key);
  bool any = false;
  for (std::size_t i = 0; i < m_levels.size(); ++i) any = any || ((mine >> i & 1) != 0 && m_levels[i]->available());
  const RemoteLevel* shard = m_shards > 0 ? m_levels[shard_of(key)].get() : nullptr;
  // The key's shard skipped during its back-off: its read is not made; a miss there, never an
  // error, and never sent to another shard.
  const bool shard_down = shard != nullptr && !shard->available();
  if (shard_down) add(m_stats.remote_shard_down, 1);
  if (!any) {
    add(m_stats.remote_misses, 1);  // every level of the key skipped during its back-off: no request is made
    RemoteGet g;
    g.outcome = RemoteGet::Outcome::unavailable;
    g.message = fmt::format("remote cache {} is skipped after repeated failures", m_shown_url);
    for (std::size_t i = 0; i < m_levels.size(); ++i) {
      if ((mine >> i & 1) == 0) continue;
      g.why += fmt::format("{}{} is down (skipped after repeated failures)", g.why.empty() ? "" : "; ",
                           m_levels[i]->name());
    }
    g.shard = shard != nullptr ? shard->name() : std::string();
    g.shard_down = shard_down;
    return g;
  }
  const auto start = std::chrono::steady_clock::now();
  // The key's levels in order, until one has the value; what each of the others said, for the message.
  RemoteGet out;
  out.outcome = RemoteGet::Outcome::unavailable;
  std::string message, why;
  std::size_t hit_at = m_levels.size();
  std::uint64_t answered = 0;  // the levels that answered without the value: a hit further on is written back there
  std::uint64_t absent = 0;    // those of them that had none (not a rejected one)
  for (std::size_t i = 0; i < m_levels.size(); ++i) {
    if ((mine >> i & 1) == 0) continue;
    RemoteLevel& level = *m_levels[i];
    const bool skipped = !level.available();
    RemoteGet g = fetch(level, key);
    if (g.outcome == RemoteGet::Outcome::hit) {
      hit_at = i;
      out = std::move(g);
      break;
    }
    std::string reason;
    if (g.outcome == RemoteGet::Outcome::rejected) {
      if (g.signed_without_key) {
        out.signed_without_key = true;
        tell_signed_without_key(level, g.message);
      } else if (m_log) {
        m_log(Severity::warning, g.message);
      }
      out.outcome = RemoteGet::Outcome::rejected;
      answered |= 1ull << i;
      reason = "rejected: " + g.message;
    } else if (g.outcome == RemoteGet::Outcome::miss) {
      if (out.outcome == RemoteGet::Outcome::unavailable) out.outcome = RemoteGet::Outcome::miss;
      g.message = fmt::format("remote cache {} has no value for key {}", level.name(), key.hex());
      answered |= 1ull << i;
      absent |= 1ull << i;
      reason = "absent from " + level.name();
    } else {
      reason = skipped ? level.name() + " is down (skipped after repeated failures)" : "unreachable: " + g.message;
    }
    message += (message.empty() ? "" : "; ") + g.message;
    why += (why.empty() ? "" : "; ") + reason;
  }
  add(m_stats.remote_requests, 1);
  add(m_stats.remote_latency_us, static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                                std::chrono::steady_clock::now() - start)
                                                                .count()));
  out.shard = shard != nullptr ? shard->name() : std::string();
  out.shard_down = shard_down;
  if (hit_at == m_levels.size()) {
    add(m_stats.remote_misses, 1);
    out.message = std::move(message);
    out.why = std::move(why);
    return out;
  }
  add(m_stats.remote_hits, 1);
  RemoteLevel& hit = *m_levels[hit_at];
  hit.hit();
  if (hit.backend().over_http) add(m_stats.remote_http_hits, 1);
  // A level that keeps missing what a later one has: the silent zero hits of a wrong address,
  // bucket, region or prefix (its own writes land where it never reads). Said once a level.
  for (std::size_t i = 0; i < hit_at; ++i) {
    RemoteLevel& level = *m_levels[i];
    if ((absent >> i & 1) == 0 || !level.missed_while_another_hit(m_config.miss_warning_after) || !m_log) continue;
    m_log(Severity::warning,
          fmt::format("remote cache {} missed its last {} requests that {} hit: is its address right (for s3://, "
                      "the bucket, region and prefix: kjit keeps values under <prefix>/ac/)? (said once)",
                      level.name(), m_config.miss_warning_after, hit.name()));
  }
  // The faster levels that answered without it get it in the background, so the next node hits
  // there (one that failed or is skipped is not written to). Dropped, like any write, when the
  // queue is full.
  if (answered != 0 && !m_config.read_only) post_write(key, out.bytes, {}, answered, true);
  return out;
}

RemoteLock RemoteTier::lock_or_wait(const Key& key, std::chrono::milliseconds timeout,
                                    std::chrono::milliseconds progress_every,
                                    const std::function<void(std::chrono::milliseconds)>& progress) {
  RemoteLock out;
  if (m_config.read_only) {
    out.message = "the remote cache is read-only here";
    return out;
  }
  RemoteLevel* const level = lock_level(key);
  if (level == nullptr) {  // no backend with locks (HTTP, S3): each node compiles what it misses
    out.message = fmt::format("remote cache {} has no level with locks (only Redis has them)", m_shown_url);
    return out;
  }
  timeout = system::saturate_duration(timeout);
  progress_every = system::saturate_duration(progress_every);
  const auto start = std::chrono::steady_clock::now();
  auto next_progress = start + progress_every;
  const std::string name = lock_name(key);
  std::string token = new_token();
  std::chrono::milliseconds pause = std::min(std::chrono::milliseconds(2), m_config.poll_every);
  for (;;) {
    if (!level->available()) {
      out.message = fmt::format("remote cache {} is skipped after repeated failures", level->name());
      return out;
    }
    if (!level->writable()) {  // a full server takes no lock either: compile without one
      out.message = fmt::format("remote cache {} refuses writes", level->name());
      return out;
    }
    system::Result<bool> taken =
        level->ask([&](RemoteStore& store) { return store.try_lock(name, token, m_config.lock_ttl); });
    if (!record(*level, taken, RemoteLevel::Call::write)) {
      out.message = taken.error().message;
      return out;
    }
    if (*taken) {
      // The holder before this one may have stored the value just before letting go.
      RemoteGet g = fetch(*level, key);
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
      m_queue.hold(token, m_queue.background().every(every, [this, level, name, token] {
        if (RemoteStore* writer = level->writer(); writer != nullptr && level->available()) {
          record(*level, writer->refresh_lock(name, token, m_config.lock_ttl));
        }
      }));
      out.outcome = RemoteLock::Outcome::acquired;
      out.token = std::move(token);
      return out;
    }
    RemoteGet g = fetch(*level, key);
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
                                waited.count() / 1000.0, key.hex(), name, level->name());
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
  return post_write(key, std::move(entry_bytes), std::move(token), levels_of(key), false);
}

bool RemoteTier::post_write(const Key& key, std::string entry_bytes, std::string token, std::uint64_t levels,
                            bool backfill) {
  const std::uint64_t size = entry_bytes.size();
  bool takes = false;  // a level of the write that takes writes now
  for (std::size_t i = 0; i < m_levels.size(); ++i) takes = takes || ((levels >> i & 1) != 0 && m_levels[i]->writable());
  const bool wanted = !m_config.read_only && size <= m_config.max_value_size && takes;
  const RemoteWriteQueue::Admitted admitted = m_queue.admit(size, wanted, !token.empty());
  if (admitted == RemoteWriteQueue::Admitted::no) {
    if (!m_config.read_only) add(m_stats.remote_dropped, 1);
    return false;
  }
  const bool sends = admitted == RemoteWriteQueue::Admitted::with_value;
  if (!sends) {
    if (!m_config.read_only) add(m_stats.remote_dropped, 1);
    entry_bytes.clear();  // the lock is released all the same: a release is small, and never dropped
  }
  const bool posted = m_queue.post(
      sends ? size : 0,
      [this, key, value = std::move(entry_bytes), token, levels, backfill]() mutable {
        write(key, std::move(value), token, levels, backfill);
      },
      [this, sends] {
        if (sends) add(m_stats.remote_dropped, 1);
      });
  if (!posted && !token.empty()) m_queue.release(token);  // not released: it expires after lock_ttl
  return posted && sends;
}

void RemoteTier::release_async(const Key& key, std::string token) {
  if (token.empty()) return;
  (void)m_queue.admit(0, false, true);
  if (!m_queue.post(0, [this, key, token] { write(key, {}, token, 0, false); }, {})) m_queue.release(token);
}

void RemoteTier::drain() { m_queue.drain(); }

system::Result<std::string> RemoteTier::ping() {
  std::string answers;
  for (auto& level : m_levels) {
    system::Result<std::string> r = level->ask([](RemoteStore& store) { return store.ping(); });
    record(*level, r);
    if (!r) return r;
    answers += (answers.empty() ? "" : "; ") + *r;
  }
  return answers;
}

void RemoteTier::write(const Key& key, std::string value, const std::string& token, std::uint64_t levels,
                       bool backfill) {
  if (!value.empty()) {
    const std::size_t size = value.size();
    const std::string encoded = encode(std::move(value));
    const bool signs = m_config.signer && m_config.signer->can_sign();
    for (std::size_t i = 0; i < m_levels.size(); ++i) {
      if ((levels >> i & 1) == 0) continue;
      RemoteLevel& level = *m_levels[i];
      RemoteStore* writer = level.writer();
      if (writer == nullptr) continue;
      if (!level.writable()) {
        add(m_stats.remote_dropped, 1);
        continue;
      }
      if (!signs) {  // unsigned: never over a signed value, which the fleet's keyed nodes need
        const system::Result<bool> r =
            writer->put_unless_prefixed(value_name(key), encoded, m_config.ttl, signed_value_magics());
        if (!record(level, r, RemoteLevel::Call::write)) continue;
        if (!*r) {
          add(m_stats.remote_dropped, 1);
          tell_signed_without_key(level, fmt::format("the value for key {} in remote cache {} is signed: not replaced "
                                                     "by this process's unsigned one",
                                                     key.hex(), level.name()));
          continue;
        }
      } else if (!record(level, writer->put(value_name(key), encoded, m_config.ttl), RemoteLevel::Call::write)) {
        continue;
      }
      add(m_stats.remote_writes, 1);
      add(m_stats.remote_bytes_written, size);
      if (backfill) add(m_stats.remote_backfills, 1);
    }
  }
  if (token.empty()) return;
  if (RemoteLevel* level = lock_level(key); level != nullptr) {
    if (RemoteStore* writer = level->writer(); writer != nullptr && level->available()) {
      record(*level, writer->unlock(lock_name(key), token));
    }
  }
  // Its refresh stops here (on the Background thread: at once).
  (void)m_queue.release(token);
}

}  // namespace kjit::cache
