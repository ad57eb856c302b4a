// cache::StoreStats: the folder's counters added to its persistent stats file, once each.
#include "core/cache/store_stats.hpp"

#include "core/cache/persistent_stats.hpp"

#include <new>

namespace kjit::cache {

StoreStats::StoreStats(std::shared_ptr<StoreFolder> folder) : m_folder(std::move(folder)) {
  m_fork = system::AtFork::add({[this] { m_flush_mutex.lock(); }, [this] { m_flush_mutex.unlock(); },
                                [this] {
                                  new (&m_flush_mutex) std::mutex();
                                  m_flushed = m_folder->stats().snapshot();
                                }});
}

system::Result<void> StoreStats::flush(std::chrono::milliseconds timeout) {
  std::lock_guard lock(m_flush_mutex);
  const StatsSnapshot now = m_folder->stats().snapshot();
  StatsSnapshot delta = now;
  delta -= m_flushed;
  if (delta == StatsSnapshot{}) return {};
  const auto top = m_folder->writable_dir();
  if (!top) return top.error();
  const PersistentStats stats((*top)->fd(), m_folder->config().dir, "stats", (*top)->file_mode());
  if (auto added = stats.add(delta, timeout); !added) return added;
  m_flushed = now;
  return {};
}

StatsSnapshot StoreStats::read() const {
  const TrustedDir* top = m_folder->dir();
  if (top == nullptr) return {};
  return PersistentStats(top->fd(), m_folder->config().dir, "stats").read();
}

system::Result<void> StoreStats::reset() {
  const TrustedDir* top = m_folder->dir();
  if (top == nullptr) {
    if (auto refused = m_folder->refusal()) return *refused;
    return {};  // not made yet: no totals to reset
  }
  return PersistentStats(top->fd(), m_folder->config().dir, "stats", top->file_mode()).reset();
}

}  // namespace kjit::cache
