// cache::Store in a team cache (KJIT_CACHE_SHARED) against a teammate: real unprivileged users (uids
// with no passwd entry, one shared group) in real processes. A FIFO a teammate plants where a file
// of kjit's goes is never waited on; a folder of the cache swapped for a link to another member's
// private folder (renameat2 RENAME_EXCHANGE, racing in a process of its own) never makes kjit
// create or remove anything there. Needs root (to become those users); skipped otherwise.
#include "core/cache/store.hpp"

#include "tests/unit/test_cache_support.hpp"
#include "support/temp_dir.hpp"
#include "support/skip.hpp"
#include "support/store_parts.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

using namespace kjit;
using namespace kjit::cache;
using namespace kjit::system;
using namespace std::chrono_literals;

namespace {

constexpr gid_t k_team = 54400;
constexpr uid_t k_member = 54321;  // the victim
constexpr uid_t k_mate = 54322;    // the teammate who attacks

// Forks, becomes `uid` (group `uid`, supplementary group k_team only), runs `body` and exits 0 when
// it returned "" (else 1, its text on the pipe). nullopt: still running after `timeout` (killed).
struct ChildResult {
  std::optional<int> status;
  std::string text;
};
ChildResult as_user(uid_t uid, const std::function<std::string()>& body, std::chrono::milliseconds timeout) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    const gid_t groups[] = {k_team};
    std::string out;
    if (::setgroups(1, groups) != 0 || ::setresgid(uid, uid, uid) != 0 || ::setresuid(uid, uid, uid) != 0) {
      out = "cannot become user " + std::to_string(uid);
    } else {
      ::umask(022);  // as a user's usual: kjit must still make 0660 / 2770 in the team cache
      try {
        out = body();
      } catch (const std::exception& e) {
        out = std::string("exception: ") + e.what();
      }
    }
    if (!out.empty()) {
      ssize_t ignored = ::write(fds[1], out.data(), out.size());
      (void)ignored;
    }
    ::_exit(out.empty() ? 0 : 1);
  }
  ::close(fds[1]);
  ChildResult r;
  r.status = test::wait_for(pid, timeout);
  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  char buf[1024];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) r.text.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  return r;
}

// A team cache as an administrator makes one: root's, group k_team, 2770. The temp folder above
// it is opened to the users.
std::filesystem::path make_team_cache(const test::TempDir& tmp) {
  ::chmod(tmp.path().c_str(), 0755);
  const auto dir = tmp / "team";
  std::filesystem::create_directory(dir);
  REQUIRE(::chown(dir.c_str(), 0, k_team) == 0);
  REQUIRE(::chmod(dir.c_str(), 02770) == 0);
  return dir;
}

StoreConfig team_config(const std::filesystem::path& dir) {
  return StoreConfig{dir.string(), 0, DirSharing::group, nullptr};
}

std::vector<std::string> names_in(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) out.push_back(e.path().filename().string());
  return out;
}

}  // namespace

TEST_SUITE("Store") {
  // #40 item 23: a FIFO a teammate planted at `stats` hung every other member's compile (the
  // stats flush read it through the lock's descriptor, and wrote it in place).
  TEST_CASE("a teammate's FIFO at stats usage a lock file or an entry never stops a member") {
    if (::geteuid() != 0) {
      KJIT_SKIP("not root: skipped (becoming two unprivileged users needs root)");
    }
    test::TempDir tmp;
    const auto dir = make_team_cache(tmp);
    const Key put_key = test::test_key(1), fifo_entry_key = test::test_key(2), fifo_lock_key = test::test_key(3);
    // The member's first use makes the folders (2770), then the teammate plants FIFOs, 0660 in the
    // team's group as the team rules allow.
    auto made = as_user(k_member, [&]() -> std::string {
      Store store(team_config(dir));
      if (!store.folder()->trusted()) return "the team cache is refused: " + store.folder()->trusted().error().message;
      if (!store.put(test::test_key(9), test::test_entry(test::test_key(9), 64)).stored) return "first put failed";
      if (!store.lock(test::test_key(9), 1s)) return "first lock failed";
      if (!store.put(fifo_entry_key, test::test_entry(fifo_entry_key, 64)).stored) return "second put failed";
      return "";
    }, 60s);
    REQUIRE_MESSAGE(made.status == 0, made.text);
    const std::string entry_hex = fifo_entry_key.hex();
    const std::vector<std::string> fifos = {
        (dir / "stats").string(), (dir / "usage").string(), (dir / "locks" / (fifo_lock_key.hex() + ".lock")).string(),
        (dir / entry_hex.substr(0, 2) / (entry_hex.substr(2) + ".kjit")).string()};
    auto planted = as_user(k_mate, [&]() -> std::string {
      for (const auto& f : fifos) {
        ::unlink(f.c_str());
        if (::mkfifo(f.c_str(), 0660) != 0 || ::chmod(f.c_str(), 0660) != 0) return "mkfifo " + f + " failed";
      }
      return "";
    }, 60s);
    REQUIRE_MESSAGE(planted.status == 0, planted.text);
    for (const auto& f : fifos) {
      struct stat st{};
      REQUIRE(::lstat(f.c_str(), &st) == 0);
      REQUIRE(S_ISFIFO(st.st_mode));
      REQUIRE(st.st_gid == k_team);
    }
    // What a compile does, as the member: look up, lock, publish, count, flush the stats; and what
    // `kjit cache stats` reads. Each returns (a failure is fine: nothing is waited on).
    auto member = as_user(k_member, [&]() -> std::string {
      Store store(team_config(dir));
      if (!store.folder()->trusted()) return "the team cache is refused: " + store.folder()->trusted().error().message;
      std::string problems;
      if (store.get(fifo_entry_key).outcome == GetResult::Outcome::hit) problems += "a FIFO entry was a hit; ";
      auto lock = store.lock(fifo_lock_key, 2s);
      if (lock) problems += "a FIFO was taken as a lock file; ";
      else if (lock.error().message.find("not a regular file") == std::string::npos) {
        problems += "lock: " + lock.error().message + "; ";
      }
      store.stats().hits.fetch_add(3);
      if (!store.put(put_key, test::test_entry(put_key, 128)).stored) problems += "put failed; ";
      if (store.get(put_key).outcome != GetResult::Outcome::hit) problems += "no hit after the put; ";
      auto flushed = kjit::test::stats_of(store).flush(2s);
      if (flushed) problems += "the stats were flushed into a FIFO; ";
      else if (flushed.error().message.find("not a regular file") == std::string::npos) {
        problems += "flush: " + flushed.error().message + "; ";
      }
      (void)kjit::test::stats_of(store).read();
      (void)kjit::test::maintenance_of(store).usage();
      return problems;
    }, 60s);
    REQUIRE_MESSAGE(member.status.has_value(), "the member's process hung on a FIFO (killed after 60 s)");
    CHECK_MESSAGE(member.status == 0, member.text);
    for (const auto& f : fifos) {  // left alone: not kjit's to remove
      struct stat st{};
      CHECK((::lstat(f.c_str(), &st) == 0 && S_ISFIFO(st.st_mode)));
    }
  }

  // #40 item 24: the lock file was opened by its path after the locks folder was checked, so a
  // teammate swapping `locks/` with a link to a member's private folder made kjit create (and
  // remove) lock files there.
  TEST_CASE("locks swapped with a link to a member's private folder never get a lock file there") {
    if (::geteuid() != 0) {
      KJIT_SKIP("not root: skipped (becoming two unprivileged users needs root)");
    }
    test::TempDir tmp;
    const auto dir = make_team_cache(tmp);
    const auto home = tmp / "home";  // the member's own, closed to everyone else
    const auto secret = home / "private";
    std::filesystem::create_directories(secret);
    REQUIRE(::chown(home.c_str(), k_member, k_member) == 0);
    REQUIRE(::chmod(home.c_str(), 0755) == 0);
    REQUIRE(::chown(secret.c_str(), k_member, k_member) == 0);
    REQUIRE(::chmod(secret.c_str(), 0700) == 0);
    test::write_file(secret / "notes.txt", "mine");
    REQUIRE(::chown((secret / "notes.txt").c_str(), k_member, k_member) == 0);
    auto first = as_user(k_member, [&]() -> std::string {
      Store store(team_config(dir));
      return store.lock(test::test_key(0), 1s) ? "" : "the first lock failed";
    }, 60s);
    REQUIRE_MESSAGE(first.status == 0, first.text);
    REQUIRE(std::filesystem::is_directory(dir / "locks"));
    // The teammate: a link to the member's private folder beside locks/, swapped with it over and
    // over until told to stop (the file `stop` appears).
    const auto link = dir / "evil";
    const auto signals = tmp / "signals";  // the teammate says it started here
    std::filesystem::create_directory(signals);
    ::chmod(signals.c_str(), 0777);
    const auto stop = signals / "stop";
    const auto started = signals / "started";
    auto linked = as_user(k_mate, [&]() -> std::string {
      return ::symlink(secret.c_str(), link.c_str()) == 0 ? "" : "symlink failed";
    }, 60s);
    REQUIRE_MESSAGE(linked.status == 0, linked.text);
    // Two swapping processes: on a busy machine one of them is more often on a CPU beside the member.
    std::vector<pid_t> mates;
    for (int m = 0; m < 2; ++m) {
      const pid_t mate = ::fork();
      REQUIRE(mate >= 0);
      if (mate == 0) {
        const gid_t groups[] = {k_team};
        if (::setgroups(1, groups) != 0 || ::setresgid(k_mate, k_mate, k_mate) != 0 ||
            ::setresuid(k_mate, k_mate, k_mate) != 0) {
          ::_exit(2);
        }
        std::uint64_t swaps = 0;
        for (std::uint64_t i = 0;; ++i) {
          if (::syscall(SYS_renameat2, AT_FDCWD, (dir / "locks").c_str(), AT_FDCWD, link.c_str(),
                        2 /* RENAME_EXCHANGE */) == 0) {
            if (++swaps == 1) ::close(::open(started.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
          }
          if (i % 64 == 0 && ::access(stop.c_str(), F_OK) == 0) break;
        }
        ::_exit(swaps > 0 ? 0 : 3);
      }
      mates.push_back(mate);
    }
    // The member starts once the swapping does.
    for (int i = 0; i < 30000 && !std::filesystem::exists(started); ++i) std::this_thread::sleep_for(1ms);
    REQUIRE(std::filesystem::exists(started));
    // Everything made or removed in the private folder meanwhile, even for a moment.
    const int watch = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    REQUIRE(watch >= 0);
    REQUIRE(::inotify_add_watch(watch, secret.c_str(), IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO) >= 0);
    // The member compiles: every lock, held a moment as a compile holds it, then released.
    auto member = as_user(k_member, [&]() -> std::string {
      Store store(team_config(dir));
      if (!store.folder()->trusted()) return "the team cache is refused: " + store.folder()->trusted().error().message;
      // Compiles for about 3 s (the race needs both on a CPU at once; no time is asserted).
      const auto until = std::chrono::steady_clock::now() + 3s;
      for (std::uint64_t i = 0; std::chrono::steady_clock::now() < until; ++i) {
        auto lock = store.lock(test::test_key(100 + i), 200ms);
        if (lock && i % 8 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50 * (i % 64)));
      }
      return "";
    }, 120s);
    test::write_file(stop, "");
    for (const pid_t mate : mates) REQUIRE(test::wait_for(mate, 60s) == 0);  // each did swap
    int events = 0;
    alignas(inotify_event) char buf[4096];
    for (ssize_t n; (n = ::read(watch, buf, sizeof buf)) > 0;) {
      for (char* p = buf; p < buf + n; p += sizeof(inotify_event) + reinterpret_cast<inotify_event*>(p)->len) ++events;
    }
    ::close(watch);
    CHECK_MESSAGE(events == 0, events << " files were made or removed in the member's private folder");
    const std::vector<std::string> left = names_in(secret);
    CHECK_MESSAGE(left == std::vector<std::string>{"notes.txt"},
                  "kjit made or removed files in the member's private folder: " << left.size() << " names");
  }
}
