// kjit::NvrtcPreparation: NVRTC made ready before the first compile needs it (kjit::prepare(),
// RuntimeConfig::prepare, KJIT_PREPARE, `import kjit`). One thread a process, started once, takes
// three steps: libnvrtc opened (base/nvrtc_library: the same library, found the same way, as the
// first request would open), the toolkit's include folders found (compile::NvrtcCompiler), and one
// empty kernel compiled to PTX, which loads NVRTC's builtins library and runs NVRTC's
// once-per-process set-up. What NVRTC makes of that kernel is dropped: nothing is cached, logged
// or counted, and no key, PTX, cubin or log of any request changes. The steps after the open are
// skipped once a request has begun (a compile takes them itself, a hit needs none, and a step beside
// a request slows it: its dlopen holds the loader's locks).
// Lifecycle: each step is work a fork waits for (system::AtFork::Busy); a forked child has no
// preparation in flight (its NVRTC is as far as the parent's got) and may start one. When the main
// thread exits (a return from main, exit(), Python's end) a step in flight is waited for before any
// static object is destroyed (NVRTC's go then, some made during a compile) and the steps not begun
// are skipped; the empty kernel is compiled only when prepare() was called in the main thread once
// (which arms that), so a program that prepares from another thread gets the other steps. Throws
// nothing: what fails here is said by the first compile, which tries again.
#pragma once

namespace kjit {

class NvrtcPreparation {
public:
  enum class State { idle, running, done };

  // Starts the thread unless it ran or runs; returns at once.
  static void start() noexcept;
  // Returns once no preparation is in flight (at once when none was started).
  static void wait() noexcept;
  static State state() noexcept;
};

}  // namespace kjit
