#include "core/cache/remote/remote_write_queue.hpp"

#include <new>

namespace kjit::cache {

RemoteWriteQueue::RemoteWriteQueue(system::Background* shared, Limits limits)
    : m_limits(limits),
      m_own(shared == nullptr ? std::make_unique<system::Background>() : nullptr),
      m_background(shared == nullptr ? m_own.get() : shared) {}

RemoteWriteQueue::~RemoteWriteQueue() { stop(); }

void RemoteWriteQueue::stop() {
  if (m_stopped) return;
  m_stopped = true;
  if (m_own) {
    m_own->finish(m_own->limits().exit_bound);
  } else {
    m_background->forget(this);
  }
  std::map<std::string, system::Background::Recurring> held;
  {
    std::lock_guard lock(m_mutex);
    held.swap(m_held);
  }
  held.clear();  // no refresh runs past here
}

RemoteWriteQueue::Admitted RemoteWriteQueue::admit(std::uint64_t bytes, bool wanted, bool must_run) {
  std::lock_guard lock(m_mutex);
  const bool fits =
      wanted && m_pending < m_limits.capacity && m_pending_bytes + bytes <= m_limits.max_bytes;
  if (!fits && !must_run) return Admitted::no;
  ++m_pending;
  m_pending_bytes += fits ? bytes : 0;
  return fits ? Admitted::with_value : Admitted::without_value;
}

bool RemoteWriteQueue::post(std::uint64_t held, std::function<void()> run, std::function<void()> drop) {
  system::Background::Job job;
  job.bytes = held;
  job.owner = this;
  job.run = [this, held, run = std::move(run)] {
    run();
    done(held);
  };
  job.drop = [this, held, drop = std::move(drop)] {
    if (drop) drop();
    done(held);
  };
  return m_background->post(std::move(job));
}

void RemoteWriteQueue::done(std::uint64_t bytes) {
  {
    std::lock_guard lock(m_mutex);
    --m_pending;
    m_pending_bytes -= bytes;
  }
  m_cv.notify_all();
}

void RemoteWriteQueue::drain() {
  std::unique_lock lock(m_mutex);
  m_cv.wait(lock, [&] { return m_pending == 0; });
}

void RemoteWriteQueue::hold(const std::string& token, system::Background::Recurring refresh) {
  std::lock_guard lock(m_mutex);
  m_held[token] = std::move(refresh);
}

system::Background::Recurring RemoteWriteQueue::release(const std::string& token) {
  system::Background::Recurring out;
  std::lock_guard lock(m_mutex);
  if (auto it = m_held.find(token); it != m_held.end()) {
    out = std::move(it->second);
    m_held.erase(it);
  }
  return out;
}

void RemoteWriteQueue::reset_in_child() {
  new (&m_mutex) std::mutex();
  new (&m_cv) std::condition_variable();
  // The parent's refreshes are the parent's worker's: never stopped from here.
  (void)new auto(std::move(m_held));
  m_held.clear();
  m_pending = 0;
  m_pending_bytes = 0;
}

}  // namespace kjit::cache
