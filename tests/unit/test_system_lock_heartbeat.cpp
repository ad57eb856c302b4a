// system::Background::heartbeat and system::LockWatch: a holder's heartbeat keeps a waiter's watch from
// ever calling it stale; a lock file that shows no progress is stale after the bound, and not
// before; a new lock file (another holder) starts the watch over.
#include "core/system/background.hpp"
#include "core/system/lock_heartbeat.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

using namespace std::chrono_literals;

namespace {

int open_file(const std::filesystem::path& p) {
  int fd = ::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  return fd;
}

}  // namespace

TEST_SUITE("LockHeartbeat") {
  TEST_CASE("a beating lock file is never stale and a silent one is stale after the bound only") {
    kjit::test::TempDir dir;
    const auto path = dir / "k.lock";
    const int fd = open_file(path);
    kjit::system::Background background;
    {
      auto beat = background.heartbeat(fd, 50ms);
      kjit::system::LockWatch watch(path, 400ms);
      const auto until = std::chrono::steady_clock::now() + 1500ms;
      while (std::chrono::steady_clock::now() < until) {
        REQUIRE_FALSE(watch.stalled());
        std::this_thread::sleep_for(20ms);
      }
    }
    // The heartbeat is gone: the file shows no more progress.
    kjit::system::LockWatch watch(path, 400ms);
    CHECK_FALSE(watch.stalled());  // first look: never stale
    std::this_thread::sleep_for(200ms);
    CHECK_FALSE(watch.stalled());
    std::this_thread::sleep_for(300ms);
    CHECK(watch.stalled());
    CHECK(watch.quiet_for() >= 400ms);
    ::close(fd);
  }

  TEST_CASE("a new lock file at the path starts the watch over and a missing one is not stale") {
    kjit::test::TempDir dir;
    const auto path = dir / "k.lock";
    ::close(open_file(path));
    kjit::system::LockWatch watch(path, 200ms);
    CHECK_FALSE(watch.stalled());
    std::this_thread::sleep_for(300ms);
    CHECK(watch.stalled());
    // Another holder: the old file removed, a new one made (another inode).
    std::filesystem::remove(path);
    const int keep = open_file(dir / "other");  // keeps the old inode number from being reused at once
    ::close(open_file(path));
    CHECK_FALSE(watch.stalled());
    std::filesystem::remove(path);
    CHECK_FALSE(watch.stalled());
    ::close(keep);
  }
}
