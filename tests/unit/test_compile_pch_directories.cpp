// PchDirectories: a process's precompiled-header folder does not outlive it, whether the object
// is destroyed, never destroyed (exit()), or the process is killed outright. Real processes
// (fork) and real SIGKILL.
#include "core/compile/pch_directories.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

namespace fs = std::filesystem;
using kjit::compile::PchDirectories;

namespace {

std::set<fs::path> pch_folders(const fs::path& base) {
  std::set<fs::path> out;
  for (const auto& e : fs::directory_iterator(base)) {
    if (e.path().filename().string().rfind("kjit-pch-", 0) == 0) out.insert(e.path());
  }
  return out;
}

// A child that leases a slot, writes a fake PCH file, reports its folder through a pipe and
// then waits until its stdin pipe closes (or it is killed). Returns the pid; `root` gets its
// folder.
pid_t leasing_child(const fs::path& base, fs::path& root, int& release_fd) {
  int report[2], hold[2];
  REQUIRE(::pipe(report) == 0);
  REQUIRE(::pipe(hold) == 0);
  std::fflush(nullptr);  // the child must not repeat this process's buffered output
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(report[0]);
    ::close(hold[1]);
    auto* dirs = new PchDirectories(base);  // never destroyed: only _exit ends this process
    auto lease = dirs->acquire();
    std::ofstream(lease.dir() / "k.pch") << std::string(4096, 'p');
    const std::string r = dirs->root().string() + "\n";
    if (::write(report[1], r.data(), r.size()) != static_cast<ssize_t>(r.size())) ::_exit(3);
    char c;
    while (::read(hold[0], &c, 1) > 0) {
    }
    ::_exit(0);
  }
  ::close(report[1]);
  ::close(hold[0]);
  std::string line;
  char c;
  while (::read(report[0], &c, 1) == 1 && c != '\n') line.push_back(c);
  ::close(report[0]);
  root = line;
  release_fd = hold[1];
  return pid;
}

int wait_for(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

}  // namespace

TEST_SUITE("compile::PchDirectories") {
  TEST_CASE("compile::PchDirectories: a killed process's folder goes at the next folder made, a live one's stays") {
    kjit::test::TempDir base;
    fs::path killed_root, live_root;
    int killed_fd = -1, live_fd = -1;
    const pid_t killed = leasing_child(base.path(), killed_root, killed_fd);
    const pid_t live = leasing_child(base.path(), live_root, live_fd);
    REQUIRE(fs::exists(killed_root / "0" / "k.pch"));
    REQUIRE(fs::exists(live_root / "0" / "k.pch"));
    ::kill(killed, SIGKILL);
    CHECK(WIFSIGNALED(wait_for(killed)));
    ::close(killed_fd);
    CHECK(fs::exists(killed_root));  // nothing ran in the killed process

    {
      PchDirectories mine(base.path());
      auto lease = mine.acquire();
      CHECK_FALSE(fs::exists(killed_root));
      CHECK(fs::exists(live_root / "0" / "k.pch"));
      CHECK(fs::exists(lease.dir()));
      CHECK(pch_folders(base.path()) == std::set<fs::path>{live_root, mine.root()});

      // The live child ends without cleaning up (_exit): its lock goes with it.
      ::close(live_fd);
      CHECK(WIFEXITED(wait_for(live)));
      CHECK(PchDirectories::remove_abandoned(base.path()) == 1);
      CHECK(pch_folders(base.path()) == std::set<fs::path>{mine.root()});
    }
    CHECK(pch_folders(base.path()).empty());  // destroyed: removed
  }

  TEST_CASE("compile::PchDirectories: exit() without destroying removes the folder, and a forked child's exit leaves its parent's") {
    kjit::test::TempDir base;
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      // Like Runtime::global: never destroyed, and reachable from a static as that one is (volatile:
      // the stores stay), so LeakSanitizer does not take it for a leak.
      static PchDirectories* volatile dirs = new PchDirectories(base.path());
      static PchDirectories::Lease* volatile lease = new PchDirectories::Lease(dirs->acquire());
      (void)lease;
      std::exit(fs::exists(dirs->root()) ? 0 : 4);
    }
    const int status = wait_for(pid);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(pch_folders(base.path()).empty());

    PchDirectories parent(base.path());
    auto lease = parent.acquire();
    std::fflush(nullptr);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) std::exit(0);  // runs the atexit handler with the parent's folder in its copy
    REQUIRE(WIFEXITED(wait_for(child)));
    CHECK(fs::exists(lease.dir()));
  }

  TEST_CASE("compile::PchDirectories: a folder without a lock file is left alone unless it is an hour old") {
    kjit::test::TempDir base;
    const fs::path young = base / "kjit-pch-young1", old = base / "kjit-pch-old123", other = base / "unrelated";
    for (const auto& d : {young, old, other}) fs::create_directories(d / "0");
    fs::last_write_time(old, fs::file_time_type::clock::now() - std::chrono::hours(2));
    fs::last_write_time(other, fs::file_time_type::clock::now() - std::chrono::hours(2));
    CHECK(PchDirectories::remove_abandoned(base.path()) == 1);
    CHECK(fs::exists(young));
    CHECK_FALSE(fs::exists(old));
    CHECK(fs::exists(other));
  }
}
