// system::Background: the one thread that does what the request path hands over. It starts on
// first need; jobs run in order, a full queue drops (and says so); finish() and the exit run what
// is queued within a bound and drop the rest; a recurring call never runs after its handle went;
// a heartbeat on it proves progress to a waiting process, and stops doing so when its holder stops.
#include "core/system/background.hpp"
#include "core/system/file_lock.hpp"
#include "core/system/lock_heartbeat.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace kjit::system;
using namespace std::chrono_literals;

namespace {

// Waits for `pid` at most `bound`; its exit status, or -1 when it did not end (then killed).
int wait_bounded(pid_t pid, std::chrono::milliseconds bound) {
  const auto until = std::chrono::steady_clock::now() + bound;
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (std::chrono::steady_clock::now() >= until) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(10ms);
  }
}

std::size_t lines_in(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

}  // namespace

TEST_SUITE("Background") {
  TEST_CASE("the thread starts on the first job and jobs run in order off the caller's thread") {
    Background bg;
    CHECK_FALSE(bg.counts().started);  // nothing at construction
    std::vector<int> order;
    std::thread::id ran_on;
    for (int i = 0; i < 50; ++i) {
      CHECK(bg.post({[&, i] {
        order.push_back(i);
        ran_on = std::this_thread::get_id();
      }}));
    }
    bg.drain();
    CHECK(bg.counts().started);
    CHECK(bg.counts().run == 50);
    REQUIRE(order.size() == 50);
    for (int i = 0; i < 50; ++i) CHECK(order[static_cast<std::size_t>(i)] == i);
    CHECK(ran_on != std::this_thread::get_id());
  }

  TEST_CASE("a full queue drops the job and calls its drop instead") {
    Background bg(Background::Limits{.max_jobs = 2, .max_bytes = 100, .exit_bound = 5000ms});
    std::atomic<bool> running{false}, release{false};
    std::atomic<int> ran{0}, dropped{0};
    CHECK(bg.post({[&] {
      running = true;
      while (!release) std::this_thread::sleep_for(1ms);
    }}));
    while (!running) std::this_thread::sleep_for(1ms);  // the queue is empty again
    CHECK(bg.post({[&] { ++ran; }, [&] { ++dropped; }, 60}));
    CHECK_FALSE(bg.post({[&] { ++ran; }, [&] { ++dropped; }, 60}));  // over max_bytes
    CHECK(bg.post({[&] { ++ran; }, [&] { ++dropped; }}));
    CHECK_FALSE(bg.post({[&] { ++ran; }, [&] { ++dropped; }}));  // over max_jobs
    CHECK(dropped == 2);
    release = true;
    bg.drain();
    CHECK(ran == 2);
    CHECK(bg.counts().dropped == 2);
    CHECK(bg.post({[&] { ++ran; }}));  // room again
    bg.drain();
    CHECK(ran == 3);
  }

  TEST_CASE("finish runs what is queued within its bound and drops the rest") {
    Background bg;
    std::atomic<int> ran{0}, dropped{0};
    for (int i = 0; i < 100; ++i) {
      bg.post({[&] {
                 std::this_thread::sleep_for(20ms);
                 ++ran;
               },
               [&] { ++dropped; }});
    }
    const std::size_t left = bg.finish(200ms);
    CHECK(ran > 0);
    CHECK(ran < 100);
    CHECK(left == static_cast<std::size_t>(dropped.load()));
    CHECK(ran + dropped == 100);
    CHECK_FALSE(bg.post({[&] { ++ran; }, [&] { ++dropped; }}));  // finished: nothing more runs
    CHECK(ran + dropped == 101);
  }

  TEST_CASE("forget drops an owner's queued jobs and leaves the others") {
    Background bg;
    std::atomic<bool> release{false};
    std::atomic<int> mine{0}, others{0}, dropped{0};
    int owner = 0;
    bg.post({[&] {
      while (!release) std::this_thread::sleep_for(1ms);
    }});
    for (int i = 0; i < 10; ++i) {
      bg.post({[&] { ++mine; }, [&] { ++dropped; }, 0, &owner});
      bg.post({[&] { ++others; }});
    }
    std::thread r([&] {
      std::this_thread::sleep_for(50ms);
      release = true;
    });
    bg.forget(&owner);
    r.join();
    bg.drain();
    CHECK(mine == 0);
    CHECK(dropped == 10);
    CHECK(others == 10);
  }

  TEST_CASE("a recurring call runs until its handle goes and never after") {
    Background bg;
    std::atomic<int> calls{0};
    {
      auto every = bg.every(10ms, [&] { ++calls; });
      const auto until = std::chrono::steady_clock::now() + 2s;
      while (calls < 3 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(5ms);
      CHECK(calls >= 3);
    }
    const int at_stop = calls;
    std::this_thread::sleep_for(100ms);
    CHECK(calls == at_stop);
  }

  TEST_CASE("queued work is flushed with a bound at exit for a worker never destroyed") {
    kjit::test::TempDir dir;
    const auto done = dir / "done";
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      // As the global Runtime: never destroyed; exit() runs the atexit handler.
      auto* bg = new Background(Background::Limits{.exit_bound = 300ms});
      for (int i = 0; i < 200; ++i) {
        bg->post({[&done] {
          std::this_thread::sleep_for(20ms);
          if (FILE* f = std::fopen(done.c_str(), "a")) {
            std::fputs("x\n", f);
            std::fclose(f);
          }
        }});
      }
      std::exit(0);
    }
    // 200 jobs of 20 ms would take 4 s; the bound lets about 15 run, then the process ends.
    REQUIRE(wait_bounded(pid, 30s) == 0);
    const std::size_t ran = lines_in(done);
    CHECK(ran > 0);    // what was queued was worked on at exit
    CHECK(ran < 200);  // within the bound, not all of it
  }

  TEST_CASE("a heartbeat on the worker proves progress to a waiting process and stops with its holder") {
    kjit::test::TempDir dir;
    const auto path = dir / "k.lock";
    int ready[2];
    REQUIRE(::pipe(ready) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(ready[0]);
      auto lock = FileLock::acquire(path, 0ms, {}, 1s);
      if (!lock) ::_exit(1);
      Background bg;
      // Busy with jobs too: the heartbeat is never late behind them.
      for (int i = 0; i < 100; ++i) bg.post({[] { std::this_thread::sleep_for(5ms); }});
      auto beat = bg.heartbeat(lock->fd(), 50ms);
      if (::write(ready[1], "y", 1) != 1) ::_exit(1);
      for (;;) ::pause();
    }
    ::close(ready[1]);
    char c = 0;
    REQUIRE(::read(ready[0], &c, 1) == 1);
    ::close(ready[0]);
    // The lock is held by a live process: a waiter cannot take it, and sees progress throughout.
    CHECK_FALSE(FileLock::try_acquire(path));
    LockWatch watch(path, 400ms);
    const auto until = std::chrono::steady_clock::now() + 1500ms;
    bool stalled = false;
    while (std::chrono::steady_clock::now() < until) {
      stalled = stalled || watch.stalled();
      std::this_thread::sleep_for(20ms);
    }
    CHECK_FALSE(stalled);
    // Stopped (SIGSTOP): no more progress, and the waiter sees it within its bound.
    ::kill(pid, SIGSTOP);
    std::this_thread::sleep_for(100ms);  // a beat in flight lands
    LockWatch after(path, 300ms);
    CHECK_FALSE(after.stalled());
    const auto bound = std::chrono::steady_clock::now() + 3s;
    while (!after.stalled() && std::chrono::steady_clock::now() < bound) std::this_thread::sleep_for(20ms);
    CHECK(after.stalled());
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }

  // #40 item 18: a child forked after the worker started inherited a thread handle of a thread it
  // does not have: its jobs never ran, drain() waited forever, and its exit waited out the bound.
  TEST_CASE("a child forked after the worker started runs its own jobs on a worker of its own") {
    kjit::test::TempDir dir;
    static Background* bg = new Background();  // as a global Runtime's: never destroyed
    std::atomic<int> parent_ran{0};
    for (int round = 0; round < 3; ++round) {
      // The parent's worker busy with a job, idle, or sleeping until a heartbeat is due.
      bg->post({[&] { ++parent_ran; std::this_thread::sleep_for(std::chrono::milliseconds(round == 0 ? 50 : 0)); }});
      auto beat = round == 2 ? bg->every(std::chrono::milliseconds(30), [] {}) : Background::Recurring();
      if (round == 1) bg->drain();
      const auto mark = dir / ("child" + std::to_string(round));
      const pid_t pid = ::fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        std::fflush(stdout);
        ::dup2(::open("/dev/null", O_WRONLY | O_CLOEXEC), 1);  // the test runner's own exit output, not twice
        bool ok = bg->post({[mark] { std::ofstream(mark) << "ran"; }});
        bg->drain();
        ok = ok && std::filesystem::exists(mark);
        std::exit(ok ? 0 : 1);  // the exit handlers finish the child's worker
      }
      int status = 0;
      bool exited = false;
      for (int i = 0; i < 600 && !exited; ++i) {  // a hang is the failure; 60 s is far above any job
        exited = ::waitpid(pid, &status, WNOHANG) == pid;
        if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (!exited) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
      REQUIRE_MESSAGE(exited, "round " << round << ": the child hung (killed after 60 s)");
      CHECK(WIFEXITED(status));
      CHECK(WEXITSTATUS(status) == 0);
      CHECK(kjit::test::read_file(mark) == "ran");
    }
    bg->drain();
    CHECK(parent_ran == 3);  // the parent's worker ran its own jobs, each once
  }
}
