#include "core/nvrtc_preparation.hpp"

#include "core/base/nvrtc_library.hpp"
#include "core/base/toolkit_location.hpp"
#include "core/compile/nvrtc_compiler.hpp"
#include "core/compile/option_marshalling.hpp"
#include "core/system/at_fork.hpp"

#include <kjit/compile_options.hpp>
#include <kjit/program.hpp>

#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

namespace kjit {
namespace {

using State = NvrtcPreparation::State;

// Leaked on purpose: read by the exit hook and after a fork.
struct Shared {
  std::mutex mutex;
  std::condition_variable changed;
  State state = State::idle;
  bool in_step = false;       // the thread is inside a step (NVRTC's code, or the loader's)
  bool exiting = false;       // exit() began: no step begins
  bool main_guarded = false;  // the main thread holds a MainThreadExit: the compile step may run
};
Shared& shared() {
  static Shared* s = new Shared();
  return *s;
}

// exit(): no step begins, and the one in flight ends first.
void at_exit() noexcept {
  Shared& s = shared();
  std::unique_lock lock(s.mutex);
  s.exiting = true;
  s.changed.wait(lock, [&s] { return !s.in_step; });
}

// The process's end, seen first. exit() runs the exiting thread's thread_local destructors before
// any exit handler (glibc's __run_exit_handlers), and an exit handler is too late for a compile in
// flight: NVRTC registers static objects of its own while it compiles, and those (newer than any
// handler of kjit's) are destroyed first. So the main thread (a return from main, exit(), Python's
// end) holds one of these, made by prepare() there, and the empty kernel is compiled only when it
// does (a program that prepares from another thread gets the other steps). exit() from another
// thread is met by the exit handlers alone, which stop the steps not begun.
thread_local bool t_guarded = false;  // this thread holds a MainThreadExit

struct MainThreadExit {
  MainThreadExit() {
    Shared& s = shared();
    std::lock_guard lock(s.mutex);
    s.main_guarded = true;
    t_guarded = true;
  }
  ~MainThreadExit() {
    if (::gettid() == ::getpid()) at_exit();
  }
  MainThreadExit(const MainThreadExit&) = delete;
  MainThreadExit& operator=(const MainThreadExit&) = delete;
};

bool main_guarded() {
  Shared& s = shared();
  std::lock_guard lock(s.mutex);
  return s.main_guarded;
}

// Runs `f` as one step unless exit() began; false then. What `f` throws is dropped: the first
// request does the same work again and says what failed.
template <class F>
bool step(F&& f) noexcept {
  Shared& s = shared();
  {
    std::lock_guard lock(s.mutex);
    if (s.exiting) return false;
    s.in_step = true;
  }
  try {
    const system::AtFork::Busy busy;  // a fork waits for NVRTC and the loader
    f();
  } catch (...) {  // NOLINT(bugprone-empty-catch): said again by the first compile
  }
  {
    std::lock_guard lock(s.mutex);
    s.in_step = false;
  }
  s.changed.notify_all();
  return true;
}

// The empty kernel, compiled as a request with default options would be (kjit's canonical
// arguments, its fast path) to PTX for the oldest arch this NVRTC knows; the output is dropped.
void compile_empty_kernel() {
  const std::vector<int> archs = compile::NvrtcCompiler::supported_archs();
  if (archs.empty()) return;
  const Arch arch = Arch::parse("compute_" + std::to_string(archs.front()));
  CompileOptions options;
  options.arch = arch;
  const Program program("kjit_prepare.cu", "extern \"C\" __global__ void kjit_prepare() {}\n");
  (void)compile::NvrtcCompiler::compile(program, compile::marshal(compile::normalize(options), arch), arch);
}

void run() noexcept {
  bool opened = false;
  step([&opened] { opened = !base::nvrtc_library_file().empty(); });
  // After the open, which every request needs (its key holds NVRTC's version), a step is taken only
  // while no request has begun: a compile takes them itself, a hit needs none of them, and a step
  // beside a request slows it (a remote hit waited 1.5 ms behind the builtins' dlopen, H200).
  auto unrequested = [] { return !compile::NvrtcCompiler::requested(); };
  if (opened) {
    std::atexit(at_exit);  // now after libnvrtc's constructors' registrations: runs before them
    if (unrequested()) step([] { base::load_nvrtc_builtins(); });
    if (unrequested()) step([] { (void)compile::NvrtcCompiler::toolkit_include_dirs(); });
    if (unrequested() && main_guarded()) step(compile_empty_kernel);
  }
  Shared& s = shared();
  {
    std::lock_guard lock(s.mutex);
    s.state = State::done;
  }
  s.changed.notify_all();
}

// Once a process: the fork handlers (a child has no thread in flight) and the first exit hook.
void register_once() {
  static const bool registered = [] {
    static system::AtFork::Registration* fork = new system::AtFork::Registration(system::AtFork::add(
        {[] { shared().mutex.lock(); }, [] { shared().mutex.unlock(); },
         [] {
           Shared& s = shared();
           new (&s.mutex) std::mutex();
           new (&s.changed) std::condition_variable();
           if (s.state == State::running) s.state = State::idle;
           s.in_step = false;
           s.main_guarded = t_guarded;  // the forking thread is the child's main thread
         }}));
    (void)fork;
    std::atexit(at_exit);
    return true;
  }();
  (void)registered;
}

}  // namespace

void NvrtcPreparation::start() noexcept {
  try {
    register_once();
  } catch (...) {  // no memory for the handlers: no preparation
    return;
  }
  if (::gettid() == ::getpid()) {
    static thread_local MainThreadExit guard;  // made once, in the main thread
    (void)guard;
  }
  Shared& s = shared();
  {
    std::lock_guard lock(s.mutex);
    if (s.state != State::idle || s.exiting) return;
    s.state = State::running;
  }
  try {
    std::thread(run).detach();
  } catch (...) {  // no thread: the first compile opens NVRTC itself, as without preparation
    {
      std::lock_guard lock(s.mutex);
      s.state = State::idle;
    }
    s.changed.notify_all();
  }
}

void NvrtcPreparation::wait() noexcept {
  Shared& s = shared();
  std::unique_lock lock(s.mutex);
  s.changed.wait(lock, [&s] { return s.state != State::running; });
}

NvrtcPreparation::State NvrtcPreparation::state() noexcept {
  Shared& s = shared();
  std::lock_guard lock(s.mutex);
  return s.state;
}

}  // namespace kjit
