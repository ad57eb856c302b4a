#include "core/system/background.hpp"

#include "core/system/at_fork.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <new>
#include <set>
#include <vector>

namespace kjit::system {
namespace {

// Every Background whose thread started and that still exists: finished by the atexit handler.
// Leaked on purpose: it must outlive every static destructor.
struct Live {
  std::mutex mutex;
  std::set<Background*> all;
  bool handler_registered = false;
};
Live& live() {
  static Live* l = new Live();
  return *l;
}

}  // namespace

Background::Recurring& Background::Recurring::operator=(Recurring&& other) noexcept {
  if (this != &other) {
    stop();
    m_bg = other.m_bg;
    m_id = other.m_id;
    other.m_bg = nullptr;
  }
  return *this;
}

void Background::Recurring::stop() {
  if (m_bg == nullptr) return;
  m_bg->unregister(m_id);
  m_bg = nullptr;
}

Background::Background(Limits limits) : m_limits(limits) {
  // The fork handlers, with the first object (no work at load time); registered outside the live
  // lock, which a fork's prepare takes after the registry's own.
  static const bool fork_handlers = [] {
    new AtFork::Registration(AtFork::add({&Background::lock_all_for_fork, &Background::unlock_all_after_fork,
                                          &Background::reset_all_in_child}));  // leaked: for the process
    return true;
  }();
  (void)fork_handlers;
  // Known to the atexit handler from the start (it is registered with the first object: no work
  // at load time). Taken here, never under m_mutex: the handler takes this lock, then m_mutex.
  Live& l = live();
  std::lock_guard lock(l.mutex);
  l.all.insert(this);
  if (!l.handler_registered) {
    l.handler_registered = true;
    std::atexit(&Background::finish_all_at_exit);
  }
}

Background::~Background() {
  {
    Live& l = live();
    std::lock_guard lock(l.mutex);  // an atexit finish in progress ends first
    l.all.erase(this);
  }
  finish(m_limits.exit_bound);
}

void Background::finish_all_at_exit() {
  Live& l = live();
  std::lock_guard lock(l.mutex);
  for (Background* bg : l.all) bg->finish(bg->m_limits.exit_bound);
  l.all.clear();
}

void Background::lock_all_for_fork() {
  Live& l = live();
  l.mutex.lock();
  for (Background* bg : l.all) bg->m_mutex.lock();
}

void Background::unlock_all_after_fork() {
  Live& l = live();
  for (Background* bg : l.all) bg->m_mutex.unlock();
  l.mutex.unlock();
}

void Background::reset_all_in_child() {
  Live& l = live();
  new (&l.mutex) std::mutex();
  for (Background* bg : l.all) bg->reset_in_child();
}

void Background::reset_in_child() {
  // One thread here. The locks and condition variables may hold the parent's waiters' state.
  new (&m_mutex) std::mutex();
  new (&m_wake) std::condition_variable();
  new (&m_idle) std::condition_variable();
  // The parent's worker is no thread of this process: forgotten, never joined nor detached (its
  // handle's storage is reused; glibc already took back its stack here).
  new (&m_thread) std::thread();
  m_thread_id = std::thread::id();
  // Its work is the parent's (which runs it): gone without running or counting here.
  m_queue.clear();
  m_queue_bytes = 0;
  m_periodic.clear();
  m_calling = 0;
  m_running = false;
  m_running_owner = nullptr;
  m_sleep_until = Clock::time_point::max();
  m_counts.started = false;
}

void Background::start() {
  if (m_thread.joinable() || m_stop) return;
  m_counts.started = true;
  m_sleep_until = Clock::time_point::min();  // awake: it looks at the work before it sleeps
  m_thread = std::thread([this] { loop(); });
  m_thread_id = m_thread.get_id();
}

void Background::start_now() {
  std::lock_guard lock(m_mutex);
  start();
}

bool Background::post(Job job) {
  {
    std::lock_guard lock(m_mutex);
    const bool fits = m_queue.size() < m_limits.max_jobs && m_queue_bytes + job.bytes <= m_limits.max_bytes;
    if (!m_stop && fits) {
      m_queue_bytes += job.bytes;
      m_queue.push_back(std::move(job));
      start();
      if (m_sleep_until != Clock::time_point::min()) m_wake.notify_one();
      return true;
    }
    ++m_counts.dropped;
  }
  if (job.drop) job.drop();
  return false;
}

Background::Recurring Background::every(std::chrono::milliseconds period, std::function<void()> fn) {
  std::lock_guard lock(m_mutex);
  const std::uint64_t id = m_next_id++;
  const auto due = Clock::now() + period;
  m_periodic.emplace(id, Periodic{period, due, std::move(fn)});
  start();
  // A sleeping worker that would wake later than this is due: wake it to sleep less.
  if (due < m_sleep_until && m_sleep_until != Clock::time_point::min()) m_wake.notify_one();
  return Recurring(this, id);
}

Background::Recurring Background::heartbeat(int fd, std::chrono::milliseconds period) {
  ::futimens(fd, nullptr);  // progress from the first moment the lock is held
  return every(period, [fd] { ::futimens(fd, nullptr); });
}

void Background::unregister(std::uint64_t id) {
  std::unique_lock lock(m_mutex);
  // Never erase a call in progress: its function (and what it uses, a descriptor) must live
  // until it returns. The worker itself may stop a recurring call from a job.
  if (std::this_thread::get_id() != m_thread_id) m_idle.wait(lock, [&] { return m_calling != id; });
  m_periodic.erase(id);
}

void Background::drain() {
  std::unique_lock lock(m_mutex);
  if (std::this_thread::get_id() == m_thread_id) return;
  m_idle.wait(lock, [&] { return (m_queue.empty() && !m_running) || !m_thread.joinable(); });
}

void Background::forget(const void* owner) {
  std::vector<Job> dropped;
  {
    std::unique_lock lock(m_mutex);
    for (auto it = m_queue.begin(); it != m_queue.end();) {
      if (it->owner == owner) {
        m_queue_bytes -= it->bytes;
        dropped.push_back(std::move(*it));
        it = m_queue.erase(it);
      } else {
        ++it;
      }
    }
    m_counts.dropped += dropped.size();
    if (std::this_thread::get_id() != m_thread_id) {
      m_idle.wait(lock, [&] { return !(m_running && m_running_owner == owner); });
    }
  }
  for (Job& j : dropped) {
    if (j.drop) j.drop();
  }
}

std::size_t Background::finish(std::chrono::milliseconds bound) {
  std::deque<Job> left;
  {
    std::unique_lock lock(m_mutex);
    if (std::this_thread::get_id() == m_thread_id) return 0;  // a job cannot finish its own thread
    if (m_thread.joinable() && !m_stop) {
      m_idle.wait_until(lock, Clock::now() + bound, [&] { return m_queue.empty() && !m_running; });
    }
    m_stop = true;
    left.swap(m_queue);
    m_queue_bytes = 0;
    m_counts.dropped += left.size();
  }
  m_wake.notify_all();
  if (m_thread.joinable()) m_thread.join();  // after the job in progress, if any
  for (Job& j : left) {
    if (j.drop) j.drop();
  }
  return left.size();
}

Background::Counts Background::counts() const {
  std::lock_guard lock(m_mutex);
  return m_counts;
}

void Background::loop() {
  std::unique_lock lock(m_mutex);
  for (;;) {
    if (m_stop) return;
    const auto now = Clock::now();
    // Recurring calls first (a heartbeat is never late behind queued writes), one at a time.
    auto due = std::find_if(m_periodic.begin(), m_periodic.end(), [&](const auto& p) { return p.second.due <= now; });
    if (due != m_periodic.end()) {
      Periodic& p = due->second;
      p.due = now + p.period;
      m_calling = due->first;
      lock.unlock();
      p.fn();  // the node stays: unregister() waits while m_calling names it
      lock.lock();
      m_calling = 0;
      ++m_counts.recurring_calls;
      m_idle.notify_all();
      continue;
    }
    if (!m_queue.empty()) {
      Job job = std::move(m_queue.front());
      m_queue.pop_front();
      m_queue_bytes -= job.bytes;
      m_running = true;
      m_running_owner = job.owner;
      lock.unlock();
      try {
        if (job.run) job.run();
      } catch (...) {
      }
      job = Job{};  // what it holds goes before the job counts as done
      lock.lock();
      m_running = false;
      m_running_owner = nullptr;
      ++m_counts.run;
      m_idle.notify_all();
      continue;
    }
    auto next = Clock::time_point::max();
    for (const auto& [id, p] : m_periodic) next = std::min(next, p.due);
    m_sleep_until = next;
    m_idle.notify_all();
    if (next == Clock::time_point::max()) {
      m_wake.wait(lock);
    } else {
      m_wake.wait_until(lock, next);
    }
    m_sleep_until = Clock::time_point::min();
  }
}

}  // namespace kjit::system
