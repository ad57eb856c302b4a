#include "core/system/file_lock.hpp"

#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <csignal>
#include <optional>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using kjit::system::FileLock;
using kjit::test::TempDir;
using namespace std::chrono_literals;

namespace {

// Forks a child that takes the lock, tells us, and waits to be killed.
pid_t child_holding(const std::filesystem::path& path) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    auto lock = FileLock::try_acquire(path);
    const char c = lock ? 'y' : 'n';
    if (::write(fds[1], &c, 1) != 1) ::_exit(1);
    for (;;) ::pause();
  }
  ::close(fds[1]);
  char c = 0;
  REQUIRE(::read(fds[0], &c, 1) == 1);
  ::close(fds[0]);
  REQUIRE(c == 'y');
  return pid;
}

void kill_and_reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

}  // namespace

TEST_SUITE("FileLock") {
  TEST_CASE("acquire, release, acquire again") {
    TempDir tmp;
    auto lock = FileLock::try_acquire(tmp / "l");
    REQUIRE(lock);
    CHECK(lock->held());
    CHECK(lock->fd() >= 0);
    CHECK_FALSE(FileLock::try_acquire(tmp / "l"));  // another open file description conflicts
    lock->release();
    CHECK_FALSE(lock->held());
    CHECK(FileLock::try_acquire(tmp / "l"));
  }

  TEST_CASE("moving keeps the lock held exactly once") {
    TempDir tmp;
    FileLock b;
    {
      auto a = FileLock::try_acquire(tmp / "l");
      REQUIRE(a);
      b = std::move(*a);
      CHECK_FALSE(a->held());
      CHECK(b.held());
    }  // destroys the moved-from a
    CHECK_FALSE(FileLock::try_acquire(tmp / "l"));
    FileLock c;
    c = std::move(b);
    CHECK(c.held());
    c.release();
    CHECK(FileLock::try_acquire(tmp / "l"));
  }

  TEST_CASE("a lock held by a killed process is acquirable immediately") {
    TempDir tmp;
    const pid_t pid = child_holding(tmp / "l");
    CHECK_FALSE(FileLock::try_acquire(tmp / "l"));
    kill_and_reap(pid);
    CHECK(FileLock::try_acquire(tmp / "l"));
  }

  TEST_CASE("the timeout is honoured and the error says so") {
    TempDir tmp;
    const pid_t pid = child_holding(tmp / "l");
    const auto start = std::chrono::steady_clock::now();
    auto lock = FileLock::acquire(tmp / "l", 150ms, {}, 1s);
    const auto waited = std::chrono::steady_clock::now() - start;
    kill_and_reap(pid);
    REQUIRE_FALSE(lock);
    CHECK(waited >= 150ms);
    CHECK(waited < 10s);  // bounded, not a hang
    CHECK(lock.error().message.find((tmp / "l").string()) != std::string::npos);
    CHECK(lock.error().message.find("still held") != std::string::npos);
    CHECK(lock.error().reason == kjit::system::Failure::Reason::timed_out);
  }

  TEST_CASE("progress is reported while waiting") {
    TempDir tmp;
    const pid_t pid = child_holding(tmp / "l");
    std::vector<std::chrono::milliseconds> calls;
    auto lock = FileLock::acquire(tmp / "l", 500ms, [&](std::chrono::milliseconds w) { calls.push_back(w); }, 20ms);
    kill_and_reap(pid);
    CHECK_FALSE(lock);
    CHECK(calls.size() >= 2);
    CHECK(std::is_sorted(calls.begin(), calls.end()));
    if (!calls.empty()) CHECK(calls.front() >= 20ms);
  }

  TEST_CASE("a waiter gets the lock once the holder dies") {
    TempDir tmp;
    const pid_t pid = child_holding(tmp / "l");
    std::thread killer([pid] {
      std::this_thread::sleep_for(100ms);
      kill_and_reap(pid);
    });
    auto lock = FileLock::acquire(tmp / "l", 20s, {}, 1s);
    killer.join();
    CHECK(lock);
  }

  TEST_CASE("a lock file that cannot be created gives nullopt and a message") {
    TempDir tmp;
    const auto lock = FileLock::acquire(tmp / "missing" / "l", 1s, {}, 1s);
    REQUIRE_FALSE(lock);
    CHECK(lock.error().message.find("opening lock file") != std::string::npos);
    CHECK(lock.error().message.find((tmp / "missing" / "l").string()) != std::string::npos);
    CHECK(lock.error().reason == kjit::system::Failure::Reason::error);
  }

  TEST_CASE("remove_file: the holder unlinks on release, and a waiter that opened the old file "
            "does not share the lock with a newcomer") {
    TempDir tmp;
    const auto path = tmp / "l";
    auto first = FileLock::try_acquire(path, FileLock::OnRelease::remove_file);
    REQUIRE(first);
    std::optional<FileLock> waiter;
    std::thread t([&] {
      if (auto lock = FileLock::acquire(path, 20s, {}, 1s)) waiter = std::move(*lock);
    });
    std::this_thread::sleep_for(50ms);  // the waiter has opened the current file by now
    first->release();
    t.join();
    REQUIRE(waiter);
    CHECK(std::filesystem::exists(path));     // the waiter locked a file that is at the path
    CHECK_FALSE(FileLock::try_acquire(path));  // so a newcomer is excluded
    waiter->release();
    CHECK(FileLock::try_acquire(path));
  }
}
