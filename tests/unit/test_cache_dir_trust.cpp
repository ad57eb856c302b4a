// prepare_trusted_dir: a cache folder is created 0700 and used only when this user owns it and
// no one else may write into it; a shared team cache (group) opts in. The case of a folder owned
// by another user needs root (chown); tests/unit/test_cli_remote.cpp tries it end to end as two
// unprivileged users.
#include "support/scoped_env.hpp"
#include "core/cache/dir_trust.hpp"

#include "core/cache/config.hpp"
#include "core/cache/store.hpp"
#include "tests/unit/test_cache_support.hpp"
#include "support/temp_dir.hpp"
#include "support/skip.hpp"
#include "support/store_parts.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>

using namespace kjit;
using namespace kjit::cache;
using namespace kjit::system;

namespace {

mode_t mode_of(const std::filesystem::path& p) {
  struct stat st{};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

// Sets an environment variable for a scope.
using kjit::test::ScopedEnv;

// A group id root is not a member of (no supplementary groups in the test runner's usual setup).
std::optional<gid_t> foreign_group() {
  for (gid_t g : {45454u, 45455u, 45456u}) {
    bool mine = g == ::getegid();
    gid_t groups[256];
    const int n = ::getgroups(256, groups);
    for (int i = 0; i < n; ++i) mine = mine || groups[i] == g;
    if (!mine) return g;
  }
  return std::nullopt;
}

}  // namespace

TEST_SUITE("dir_trust") {
  TEST_CASE("a missing cache folder is created 0700 whatever the umask and with its parents") {
    test::TempDir tmp;
    const mode_t old = ::umask(0);
    auto r = prepare_trusted_dir((tmp / "a/b/cache").string(), DirSharing::private_to_user);
    ::umask(old);
    REQUIRE(r);
    CHECK(mode_of(tmp / "a/b/cache") == 0700);
    CHECK(prepare_trusted_dir((tmp / "a/b/cache").string(), DirSharing::private_to_user));  // again: fine
  }

  TEST_CASE("a folder others or the group may write into is refused with how to fix it") {
    test::TempDir tmp;
    const auto dir = tmp / "cache";
    std::filesystem::create_directory(dir);
    ::chmod(dir.c_str(), 0777);
    auto r = prepare_trusted_dir(dir.string(), DirSharing::private_to_user);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("writable by every user") != std::string::npos);
    CHECK(r.error().message.find(dir.string()) != std::string::npos);
    CHECK_FALSE(prepare_trusted_dir(dir.string(), DirSharing::group));  // shared or not: never world-writable
    ::chmod(dir.c_str(), 0770);
    r = prepare_trusted_dir(dir.string(), DirSharing::private_to_user);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("KJIT_CACHE_SHARED") != std::string::npos);
    CHECK(prepare_trusted_dir(dir.string(), DirSharing::group));  // a team cache opts in
    ::chmod(dir.c_str(), 0755);
    CHECK(prepare_trusted_dir(dir.string(), DirSharing::private_to_user));  // not writable by others: fine
  }

  TEST_CASE("a shared team cache is created group-writable and set-group-ID") {
    test::TempDir tmp;
    REQUIRE(prepare_trusted_dir((tmp / "team").string(), DirSharing::group));
    CHECK(mode_of(tmp / "team") == 02770);
  }

  TEST_CASE("a folder another user owns is refused (as root: chown)") {
    if (::geteuid() != 0) {
      KJIT_SKIP("not root: the folder of another owner is tried end to end in test_cli_remote.cpp when root");
    }
    test::TempDir tmp;
    const auto dir = tmp / "cache";
    std::filesystem::create_directory(dir);
    ::chmod(dir.c_str(), 0700);
    REQUIRE(::chown(dir.c_str(), 40001, 40001) == 0);
    auto r = prepare_trusted_dir(dir.string(), DirSharing::private_to_user);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("belongs to user 40001") != std::string::npos);
  }

  TEST_CASE("a path that is a file is refused") {
    test::TempDir tmp;
    test::write_file(tmp / "file", "x");
    CHECK_FALSE(prepare_trusted_dir((tmp / "file").string(), DirSharing::private_to_user));
  }

  // #30 item 1: KJIT_CACHE_SHARED used to accept a folder of any owner and any group.
  TEST_CASE("a team cache must be the user's or root's with one of the user's groups (as root: chown)") {
    if (::geteuid() != 0) {
      KJIT_SKIP("not root: skipped (chown needs root); test_cli_remote.cpp tries the team cases as unprivileged users");
    }
    test::TempDir tmp;
    const auto dir = tmp / "team";
    std::filesystem::create_directory(dir);
    ::chmod(dir.c_str(), 02770);
    REQUIRE(::chown(dir.c_str(), 40001, ::getegid()) == 0);
    auto r = prepare_trusted_dir(dir.string(), DirSharing::group);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("belongs to user 40001") != std::string::npos);
    const auto other = foreign_group();
    REQUIRE(other.has_value());
    REQUIRE(::chown(dir.c_str(), 0, *other) == 0);
    ::chmod(dir.c_str(), 02770);
    r = prepare_trusted_dir(dir.string(), DirSharing::group);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("not one of this user's groups") != std::string::npos);
    REQUIRE(::chown(dir.c_str(), 0, ::getegid()) == 0);
    ::chmod(dir.c_str(), 02770);
    CHECK(prepare_trusted_dir(dir.string(), DirSharing::group));
  }

  // #30 items 1 and 2: the temp fallback was followed through a link, and could be a team cache.
  TEST_CASE("the temp-dir fallback is never a team cache and never a symbolic link") {
    test::TempDir tmp;
    ScopedEnv tmpdir("TMPDIR", tmp.path().string());
    const std::string fallback = temp_fallback_cache_dir();
    REQUIRE(fallback == (tmp / ("kjit-cache-" + std::to_string(::getuid()))).string());
    std::filesystem::create_directory(tmp / "docs");
    ::chmod((tmp / "docs").c_str(), 0700);
    std::filesystem::create_directory_symlink(tmp / "docs", fallback);
    auto r = prepare_trusted_dir(fallback, DirSharing::private_to_user);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("symbolic link") != std::string::npos);
    CHECK_FALSE(prepare_trusted_dir(fallback, DirSharing::group));
    {
      Store store({.dir = fallback, .sharing = DirSharing::group});
      CHECK_FALSE(store.folder()->trusted());
      CHECK_FALSE(store.put(test::test_key(1), test::test_entry(test::test_key(1), 100)).stored);
    }
    CHECK(std::filesystem::is_empty(tmp / "docs"));
    std::filesystem::remove(fallback);
    std::filesystem::create_directory(fallback);
    ::chmod(fallback.c_str(), 02770);  // group-writable: fine for a team cache, never here
    r = prepare_trusted_dir(fallback, DirSharing::group);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("writable by its group") != std::string::npos);
  }

  // #30 item 3: under umask 022 shard folders and locks/ came out 2755 and usage/stats 0644.
  TEST_CASE("everything kjit makes in a team cache is 2770 or 0660 whatever the umask") {
    test::TempDir tmp;
    const auto dir = tmp / "team";
    const mode_t old = ::umask(022);
    {
      Store store({.dir = dir.string(), .sharing = DirSharing::group});
      REQUIRE(store.folder()->trusted());
      const auto key = test::test_key(3);
      REQUIRE(store.put(key, test::test_entry(key, 500)).stored);
      auto lock = store.lock(key, std::chrono::seconds(1), {}, std::chrono::seconds(1));
      REQUIRE(lock);
      CHECK(mode_of(dir / "locks") == 02770);
      CHECK(mode_of(store.folder()->lock_path(key)) == 0660);
      lock->release();
      store.get(key);
      REQUIRE(kjit::test::stats_of(store).flush());
      CHECK(mode_of(dir) == 02770);
      CHECK(mode_of(store.entry_path(key).parent_path()) == 02770);
      CHECK(mode_of(store.entry_path(key)) == 0660);
      CHECK(mode_of(dir / "usage") == 0660);
      CHECK(mode_of(dir / "stats") == 0660);
      CHECK(mode_of(dir / "CACHEDIR.TAG") == 0660);
    }
    ::umask(old);
  }

  // #30 item 1: what is read from a team cache must carry its group (or be the user's).
  TEST_CASE("a shard folder or entry in a team cache that neither the user nor the team owns is not used") {
    if (::geteuid() != 0) {
      KJIT_SKIP("not root: skipped (chown needs root)");
    }
    const auto other = foreign_group();
    REQUIRE(other.has_value());
    test::TempDir tmp;
    const auto dir = tmp / "team";
    Store store({.dir = dir.string(), .sharing = DirSharing::group});
    const auto key = test::test_key(4);
    REQUIRE(store.put(key, test::test_entry(key, 500)).stored);
    REQUIRE(store.get(key).outcome == GetResult::Outcome::hit);
    // Planted by someone outside the team: another owner, another group, writable by its group.
    REQUIRE(::chown(store.entry_path(key).c_str(), 40001, *other) == 0);
    ::chmod(store.entry_path(key).c_str(), 0664);
    GetResult g = store.get(key);
    CHECK(g.outcome == GetResult::Outcome::error);
    CHECK(g.message.find("belongs to user 40001") != std::string::npos);
    REQUIRE(::chown(store.entry_path(key).c_str(), 0, ::getegid()) == 0);
    ::chmod(store.entry_path(key).c_str(), 0660);
    REQUIRE(store.get(key).outcome == GetResult::Outcome::hit);
    const auto shard = store.entry_path(key).parent_path();
    REQUIRE(::chown(shard.c_str(), 40001, *other) == 0);
    ::chmod(shard.c_str(), 0775);
    g = store.get(key);
    CHECK(g.outcome == GetResult::Outcome::error);
    CHECK(g.message.find(shard.string()) != std::string::npos);
  }
}
