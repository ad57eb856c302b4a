// A child process waited for with a bound: the tests that start real processes (the cache's,
// the two libraries' fork) share it. No doctest here: helper programs include it too.
#pragma once

#include <csignal>
#include <chrono>
#include <optional>
#include <sys/types.h>
#include <sys/wait.h>
#include <thread>

namespace kjit::test {

// Exit status of `pid` (128 + signal if killed), or nullopt when it is still running after
// `timeout`, in which case it is killed.
inline std::optional<int> wait_for(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0) return -1;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return std::nullopt;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace kjit::test
