#include "core/system/at_fork.hpp"

#include <pthread.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <new>

namespace kjit::system {
namespace {

// Leaked on purpose: a fork may come during static destruction.
struct Registry {
  std::mutex mutex;  // held from prepare until the parent's or child's handlers ran
  std::map<std::uint64_t, AtFork::Handlers> handlers;
  std::uint64_t next_id = 1;
  bool installed = false;
};
Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

// The Busy scopes in progress; a fork waits until none is (and lets none start meanwhile).
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  std::uint64_t busy = 0;   // threads inside a scope
  unsigned forking = 0;     // forks being prepared (threads may fork at once)
};
Gate& gate() {
  static Gate* g = new Gate();
  return *g;
}
thread_local unsigned t_depth = 0;  // this thread's nesting

void prepare() {
  {
    Gate& g = gate();
    std::unique_lock lock(g.mutex);
    ++g.forking;
    const std::uint64_t mine = t_depth > 0 ? 1 : 0;  // a fork from inside a scope does not wait for itself
    g.changed.wait(lock, [&] { return g.busy <= mine; });
  }
  Registry& r = registry();
  r.mutex.lock();
  for (auto it = r.handlers.rbegin(); it != r.handlers.rend(); ++it) {
    if (it->second.prepare) it->second.prepare();
  }
}

void open_gate() {
  Gate& g = gate();
  {
    std::lock_guard lock(g.mutex);
    --g.forking;
  }
  g.changed.notify_all();
}

void parent() {
  Registry& r = registry();
  for (auto& [id, h] : r.handlers) {
    if (h.parent) h.parent();
  }
  r.mutex.unlock();
  open_gate();
}

void child() {
  Registry& r = registry();
  // One thread here: the lock is fresh, whoever held it in the parent.
  new (&r.mutex) std::mutex();
  Gate& g = gate();
  new (&g.mutex) std::mutex();
  new (&g.changed) std::condition_variable();
  g.busy = t_depth > 0 ? 1 : 0;  // the parent's other scopes are no threads here
  g.forking = 0;
  r.mutex.lock();
  for (auto& [id, h] : r.handlers) {
    if (h.child) h.child();
  }
  r.mutex.unlock();
}

}  // namespace

AtFork::Busy::Busy() {
  if (t_depth++ > 0) return;
  Gate& g = gate();
  std::unique_lock lock(g.mutex);
  g.changed.wait(lock, [&] { return g.forking == 0; });
  ++g.busy;
}

AtFork::Busy::~Busy() {
  if (--t_depth > 0) return;
  Gate& g = gate();
  {
    std::lock_guard lock(g.mutex);
    --g.busy;
  }
  g.changed.notify_all();
}

AtFork::Registration& AtFork::Registration::operator=(Registration&& other) noexcept {
  if (this != &other) {
    reset();
    m_id = other.m_id;
    other.m_id = 0;
  }
  return *this;
}

void AtFork::Registration::reset() {
  if (m_id == 0) return;
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.handlers.erase(m_id);
  m_id = 0;
}

AtFork::Registration AtFork::add(Handlers handlers) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (!r.installed) {
    r.installed = true;
    ::pthread_atfork(&prepare, &parent, &child);
  }
  const std::uint64_t id = r.next_id++;
  r.handlers.emplace(id, std::move(handlers));
  return Registration(id);
}

}  // namespace kjit::system
