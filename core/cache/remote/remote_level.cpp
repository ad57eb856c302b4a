#include "core/cache/remote/remote_level.hpp"

#include <new>

namespace kjit::cache {
namespace {

std::int64_t now_ticks() { return std::chrono::steady_clock::now().time_since_epoch().count(); }

}  // namespace

RemoteLevel::RemoteLevel(RemoteListEntry entry, const RemoteBackend& backend, RemoteOpenOptions options,
                         std::unique_ptr<RemoteStore> request)
    : m_entry(std::move(entry)), m_backend(backend), m_options(std::move(options)), m_request(std::move(request)) {}

RemoteStore* RemoteLevel::writer() {
  if (!m_writer) {
    if (auto s = open_remote_store(m_entry.url, m_options)) m_writer = std::move(*s);
  }
  return m_writer.get();
}

bool RemoteLevel::available() const {
  const std::int64_t until = m_down_until.load(std::memory_order_relaxed);
  return until == 0 || now_ticks() >= until;
}

bool RemoteLevel::writable() const {
  const std::int64_t until = m_refusing_until.load(std::memory_order_relaxed);
  return available() && (until == 0 || now_ticks() >= until);
}

RemoteLevel::Outcome RemoteLevel::record(const system::Failure* failure, Call call, const Policy& policy) {
  const auto backoff_ticks = std::chrono::duration_cast<std::chrono::steady_clock::duration>(policy.backoff).count();
  Outcome out;
  if (failure == nullptr) {
    out.ok = true;
    m_failures.store(0, std::memory_order_relaxed);
    m_down_until.store(0, std::memory_order_relaxed);
    out.came_back = m_down.exchange(false);
    if (call == Call::write) {
      m_refusals.store(0, std::memory_order_relaxed);
      m_refusing_until.store(0, std::memory_order_relaxed);
      out.takes_writes = m_refusing.exchange(false);
    }
    return out;
  }
  if (failure->reason == system::Failure::Reason::refused) {
    // The server answered: it is up and serves reads. Only its writes (and locks) pause.
    out.in_row = m_refusals.fetch_add(1, std::memory_order_relaxed) + 1;
    if (out.in_row >= policy.failures_before_backoff) {
      m_refusing_until.store(now_ticks() + backoff_ticks, std::memory_order_relaxed);
      out.began_refusing = !m_refusing.exchange(true);
    }
    return out;
  }
  out.in_row = m_failures.fetch_add(1, std::memory_order_relaxed) + 1;
  if (out.in_row >= policy.failures_before_backoff) {
    m_down_until.store(now_ticks() + backoff_ticks, std::memory_order_relaxed);
    out.went_down = !m_down.exchange(true);
  }
  return out;
}

bool RemoteLevel::missed_while_another_hit(unsigned bound) {
  const unsigned n = m_missed_in_row.fetch_add(1, std::memory_order_relaxed) + 1;
  return n >= bound && !m_told_missing.exchange(true);
}

void RemoteLevel::reset_in_child() {
  new (&m_request_mutex) std::mutex();
  // The parent's connections are the parent's: forgotten here (never closed nor written to), a
  // new one opened on first use (open_remote_store connects lazily).
  if (auto fresh = open_remote_store(m_entry.url, m_options)) {
    (void)m_request.release();
    m_request = std::move(*fresh);
  }
  (void)m_writer.release();
}

}  // namespace kjit::cache
