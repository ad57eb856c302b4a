#include "core/system/atomic_file.hpp"

#include "support/temp_dir.hpp"
#include "tests/unit/test_cache_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <optional>
#include <set>
#include <sys/resource.h>
#include <sys/stat.h>

using kjit::system::AtomicFile;
using kjit::test::TempDir;

namespace {

std::vector<std::string> names_in(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_SUITE("AtomicFile") {
  TEST_CASE("commit publishes the whole content and leaves nothing else") {
    TempDir tmp;
    const auto target = tmp / "entry.kjit";
    auto file = AtomicFile::create(target);
    REQUIRE_MESSAGE(file, (file ? std::string() : file.error().message));
    CHECK(file->temp_path().parent_path() == tmp.path());
    CHECK(file->temp_path().filename().string().starts_with(".tmp.entry.kjit."));
    CHECK(file->write("hello "));
    CHECK(file->write("world"));
    CHECK_FALSE(std::filesystem::exists(target));  // nothing visible before commit
    REQUIRE(file->commit(AtomicFile::Sync::no));
    CHECK(file->committed());
    CHECK(kjit::test::read_file(target) == "hello world");
    CHECK(names_in(tmp.path()) == std::vector<std::string>{"entry.kjit"});
  }

  TEST_CASE("commit with fsync works too and replaces an existing target") {
    TempDir tmp;
    const auto target = tmp / "t";
    kjit::test::write_file(target, "old");
    auto file = AtomicFile::create(target);
    REQUIRE(file);
    REQUIRE(file->write("new"));
    REQUIRE(file->commit(AtomicFile::Sync::yes));
    CHECK(kjit::test::read_file(target) == "new");
    CHECK(names_in(tmp.path()).size() == 1);
  }

  TEST_CASE("the destructor without commit leaves nothing, and the target untouched") {
    TempDir tmp;
    const auto target = tmp / "t";
    kjit::test::write_file(target, "old");
    {
      auto file = AtomicFile::create(target);
      REQUIRE(file);
      REQUIRE(file->write(std::string(100000, 'x')));
      CHECK(std::filesystem::exists(file->temp_path()));
    }
    CHECK(names_in(tmp.path()) == std::vector<std::string>{"t"});
    CHECK(kjit::test::read_file(target) == "old");
  }

  TEST_CASE("discard, then commit fails") {
    TempDir tmp;
    auto file = AtomicFile::create(tmp / "t");
    REQUIRE(file);
    file->discard();
    const auto committed = file->commit(AtomicFile::Sync::no);
    REQUIRE_FALSE(committed);
    CHECK_FALSE(committed.error().message.empty());
    CHECK(names_in(tmp.path()).empty());
  }

  TEST_CASE("temporary names are unique") {
    TempDir tmp;
    std::vector<AtomicFile> files;
    std::set<std::string> names;
    for (int i = 0; i < 200; ++i) {
      auto f = AtomicFile::create(tmp / "same");
      REQUIRE(f);
      names.insert(f->temp_path().string());
      files.push_back(std::move(*f));
    }
    CHECK(names.size() == 200);
    files.clear();
    CHECK(names_in(tmp.path()).empty());
  }

  TEST_CASE("a moved-from file owns nothing - the moved-to one commits") {
    TempDir tmp;
    std::optional<AtomicFile> b;
    {
      auto a = AtomicFile::create(tmp / "t");
      REQUIRE(a);
      b.emplace(std::move(*a));
    }  // destroying the moved-from a must not remove b's temporary
    REQUIRE(b->write("x"));
    REQUIRE(b->commit());
    CHECK(kjit::test::read_file(tmp / "t") == "x");
  }

  TEST_CASE("rename failure reports both paths and removes the temporary") {
    TempDir tmp;
    const auto target = tmp / "target";
    std::filesystem::create_directory(target);
    kjit::test::write_file(target / "inside", "keeps the directory non-empty");
    auto file = AtomicFile::create(target);
    REQUIRE(file);
    const std::string temp = file->temp_path().string();
    REQUIRE(file->write("data"));
    const auto committed = file->commit(AtomicFile::Sync::no);
    REQUIRE_FALSE(committed);
    const std::string& error = committed.error().message;
    CHECK(error.find(temp) != std::string::npos);
    CHECK(error.find(target.string()) != std::string::npos);
    CHECK(error.find("rename") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(temp));
    CHECK(names_in(tmp.path()) == std::vector<std::string>{"target"});
  }

  TEST_CASE("create in a missing folder fails with a message naming it") {
    TempDir tmp;
    const auto file = AtomicFile::create(tmp / "missing" / "t");
    REQUIRE_FALSE(file);
    CHECK(file.error().message.find((tmp / "missing").string()) != std::string::npos);
    CHECK(file.error().message.find("No such file") != std::string::npos);
  }

  TEST_CASE("the file gets mode 0666 minus the umask, like any new file") {
    TempDir tmp;
    const mode_t old = ::umask(022);
    auto file = AtomicFile::create(tmp / "t");
    ::umask(old);
    REQUIRE(file);
    REQUIRE(file->commit());
    struct stat st{};
    REQUIRE(::stat((tmp / "t").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0644);
  }

  TEST_CASE("a file-size limit (EFBIG) fails the write and leaves no partial file") {
    TempDir tmp;
    const std::string failures = kjit::test::run_in_child([&]() -> std::string {
      std::signal(SIGXFSZ, SIG_IGN);
      rlimit limit{64 * 1024, 64 * 1024};
      if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return "setrlimit failed";
      auto file = AtomicFile::create(tmp / "big");
      if (!file) return "create failed";
      const auto written = file->write(std::string(1 << 20, 'x'));
      if (written) return "a write past RLIMIT_FSIZE succeeded";
      if (written.error().message.find("File too large") == std::string::npos) {
        return "unexpected message: " + written.error().message;
      }
      if (file->commit()) return "commit after a failed write succeeded";
      return {};
    });
    CHECK_MESSAGE(failures.empty(), failures);
    CHECK(names_in(tmp.path()).empty());
  }
}

TEST_SUITE("AtomicFile") {
  // #30 item 6: a write past RLIMIT_FSIZE used to kill the process (SIGXFSZ's default action).
  TEST_CASE("past RLIMIT_FSIZE with SIGXFSZ at its default the write fails with EFBIG and the process lives") {
    TempDir tmp;
    const std::string failures = kjit::test::run_in_child([&]() -> std::string {
      struct sigaction before{};
      ::sigaction(SIGXFSZ, nullptr, &before);
      if (before.sa_handler != SIG_DFL) return "SIGXFSZ is not at its default in the child";
      rlimit limit{64 * 1024, 64 * 1024};
      if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return "setrlimit failed";
      auto file = AtomicFile::create(tmp / "big");
      if (!file) return "create failed";
      const auto written = file->write(std::string(1 << 20, 'x'));
      if (written) return "a write past RLIMIT_FSIZE succeeded";
      if (written.error().message.find("File too large") == std::string::npos) {
        return "unexpected message: " + written.error().message;
      }
      // What kjit found is what it leaves: the disposition, the mask, nothing pending.
      struct sigaction after{};
      ::sigaction(SIGXFSZ, nullptr, &after);
      if (after.sa_handler != SIG_DFL) return "SIGXFSZ's disposition changed";
      sigset_t mask, pending;
      ::pthread_sigmask(SIG_SETMASK, nullptr, &mask);
      if (sigismember(&mask, SIGXFSZ) == 1) return "SIGXFSZ left blocked";
      sigpending(&pending);
      if (sigismember(&pending, SIGXFSZ) == 1) return "SIGXFSZ left pending";
      return {};
    });
    CHECK_MESSAGE(failures.empty(), failures);
    CHECK(names_in(tmp.path()).empty());
  }
}
