// prepare_trusted_dir: a cache folder is created 0700 and used only when this user owns it and
// no one else may write into it; a shared team cache (group) opts in. The case of a folder owned
// by another user needs root (chown); tests/unit/test_cli_remote.cpp tries it end to end as two
// unprivileged users.
#include "cache/dir_trust.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

using namespace kjit;
using namespace kjit::cache;

namespace {

mode_t mode_of(const std::filesystem::path& p) {
  struct stat st{};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
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
      MESSAGE("not root: the folder of another owner is tried end to end in test_cli_remote.cpp when root");
      return;
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
}
