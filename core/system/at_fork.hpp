// kjit::system::AtFork: fork() as a lifecycle event (as CPython and jemalloc treat it). Objects that
// hold locks, threads or connections register handlers; one pthread_atfork registration (made
// with the first handler, never at load time) runs them: `prepare` in the forking thread before
// fork(), newest first (each takes its locks, so no lock is held by a thread the child will not
// have), then `parent` in the parent (releases them) or `child` in the child (makes the object
// fresh: new locks, no worker thread, none of the parent's work in flight), oldest first. The
// handlers of one object run under the registry's lock: an object never goes away between its
// prepare and its parent or child handler. Handlers must not throw nor register or remove
// handlers.
// A Busy scope marks work a fork waits for before any prepare handler runs: a call into a library
// whose own locks and once-initialisations a child could find held forever (NVRTC, nvJitLink,
// kjit's first reading of the toolkit). A thread must not hold a lock that a prepare handler
// takes while it enters one (it may wait there while a fork is prepared); scopes nest.
// No CUDA here; nothing here throws past allocation failures.
#pragma once

#include "core/system/tools_api.hpp"

#include <cstdint>
#include <functional>

namespace kjit::system {

class AtFork {
public:
  struct Handlers {
    std::function<void()> prepare;  // each may be empty
    std::function<void()> parent;
    std::function<void()> child;
  };

  // The handlers stay until this goes (or is reset). Move-only.
  class Registration {
  public:
    Registration() = default;
    Registration(Registration&& other) noexcept : m_id(other.m_id) { other.m_id = 0; }
    Registration& operator=(Registration&& other) noexcept;
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;
    ~Registration() { reset(); }
    KJIT_TOOLS_API void reset();

  private:
    friend class AtFork;
    explicit Registration(std::uint64_t id) : m_id(id) {}
    std::uint64_t m_id = 0;
  };

  static Registration add(Handlers handlers);

  class Busy {
  public:
    Busy();
    ~Busy();
    Busy(const Busy&) = delete;
    Busy& operator=(const Busy&) = delete;
  };
};

}  // namespace kjit::system
