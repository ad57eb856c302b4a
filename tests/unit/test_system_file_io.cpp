// system::read_file and write_file_atomically: kjit's one whole-file reader (its errors name the
// file and why) and its one atomic writer (a writer SIGKILLed mid-write leaves the old content or
// the whole new one; a failed write leaves no temporary), with real processes and an
// unprivileged user (setpriv).
#include "core/system/file_io.hpp"

#include "support/temp_dir.hpp"
#include "tests/unit/test_cache_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <random>
#include <sys/resource.h>
#include <sys/stat.h>
#include <thread>

using kjit::system::read_file;
using kjit::system::write_file_atomically;
using kjit::test::TempDir;

namespace {

const std::string k_tool = std::string(KJIT_TEST_TOOLS_DIR) + "/kjit_cache_file_io";

std::vector<std::string> names_in(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::size_t temporaries_in(const std::filesystem::path& dir) {
  const auto names = names_in(dir);
  return static_cast<std::size_t>(
      std::count_if(names.begin(), names.end(), [](const std::string& n) { return n.starts_with(".tmp."); }));
}

struct Command {
  int code = -1;
  std::string out;
};

// `command` through /bin/sh, its stdout collected.
Command run(const std::string& command) {
  Command r;
  FILE* p = ::popen(command.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The tool as an unprivileged user with no groups.
Command as_nobody(const std::string& args) {
  return run("setpriv --reuid=54321 --regid=54321 --clear-groups " + k_tool + " " + args);
}

// `size` pseudo-random bytes, different for every seed.
std::string random_bytes(std::size_t size, std::uint64_t seed) {
  return kjit::test::key_bytes(kjit::test::test_key(seed), size);
}

}  // namespace

TEST_SUITE("FileIo") {
  TEST_CASE("read_file reads every byte of a file larger than its first guess and stdin") {
    TempDir dir;
    const std::string bytes = random_bytes(100'003, 7);
    kjit::test::write_file(dir / "blob", bytes);
    const auto f = read_file(dir / "blob");
    REQUIRE(f.ok());
    CHECK(f.bytes == bytes);
    CHECK(f.path == (dir / "blob").string());
    const auto r = run("head -c 70001 " + (dir / "blob").string() + " | " + k_tool + " read -");
    CHECK(r.code == 0);
    CHECK(r.out == "70001\n");
  }

  TEST_CASE("the error of read_file names the file and why") {
    TempDir dir;
    const auto missing = read_file(dir / "missing");
    CHECK(missing.error == ENOENT);
    CHECK(missing.message() == "reading " + (dir / "missing").string() + ": No such file or directory");
    const auto folder = read_file(dir.path());
    CHECK(folder.error == EISDIR);
    CHECK(folder.message() == "reading " + dir.path().string() + ": Is a directory");
    const std::string bytes = random_bytes(5000, 11);
    kjit::test::write_file(dir / "big", bytes);
    const auto big = read_file(dir / "big", 4096);
    CHECK(big.error == EFBIG);
    CHECK(big.bytes.empty());
    CHECK(big.message() == "reading " + (dir / "big").string() + ": larger than 4096 bytes");
    CHECK(read_file(dir / "big", 5000).bytes == bytes);

    // A file the user may not read: the reason is the errno's text.
    ::chmod(dir.path().c_str(), 0755);
    ::chmod((dir / "big").c_str(), 0600);
    const auto denied = as_nobody("read " + (dir / "big").string());
    CHECK(denied.code == 1);
    CHECK(denied.out == "reading " + (dir / "big").string() + ": Permission denied\n");
  }

  // #30 item 8: /dev/zero as a source was read until memory ran out ("internal: std::bad_alloc").
  TEST_CASE("read_file refuses a device and a FIFO without waiting for a writer") {
    TempDir dir;
    const auto zero = read_file("/dev/zero", 1 << 20);
    CHECK(zero.error == EINVAL);
    CHECK(zero.message().starts_with("reading /dev/zero: not a regular file"));
    REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
    const auto fifo = read_file(dir / "fifo");  // no writer: must not wait for one
    CHECK(fifo.error == EINVAL);
    CHECK(fifo.message().find((dir / "fifo").string()) != std::string::npos);
  }

  TEST_CASE("write_file_atomically replaces the whole content and leaves nothing else") {
    TempDir dir;
    const auto target = dir / "out.bin";
    const std::string first = random_bytes(300'001, 1), second = random_bytes(17, 2);
    REQUIRE(write_file_atomically(target, first));
    CHECK(read_file(target).bytes == first);
    REQUIRE(write_file_atomically(target, second, kjit::system::AtomicFile::Sync::no));
    CHECK(read_file(target).bytes == second);
    CHECK(names_in(dir.path()) == std::vector<std::string>{"out.bin"});
  }

  TEST_CASE("write_file_atomically writes through a link and in place to a device") {
    TempDir dir;
    kjit::test::write_file(dir / "real", "old");
    std::filesystem::create_symlink("real", dir / "link");
    REQUIRE(write_file_atomically(dir / "link", "new"));
    CHECK(std::filesystem::is_symlink(dir / "link"));
    CHECK(kjit::test::read_file(dir / "real") == "new");
    CHECK(names_in(dir.path()) == std::vector<std::string>{"link", "real"});
    // Nothing can be renamed over /dev/null: it is written, and stays a device.
    const auto dev_before = names_in("/dev");
    REQUIRE(write_file_atomically("/dev/null", random_bytes(1000, 3)));
    struct stat st{};
    REQUIRE(::stat("/dev/null", &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
    CHECK(temporaries_in("/dev") == 0);
  }

  // A writer killed at any point of a large write: the target always parses as one whole
  // version, read while it writes and after it died.
  TEST_CASE("a writer SIGKILLed mid-write leaves the old or the whole new content") {
    TempDir dir;
    const auto target = dir / "target";
    constexpr std::size_t k_size = 4 << 20;
    kjit::test::write_file(target, kjit::test::versioned_content(0, k_size));
    std::mt19937 gen(2026);
    std::uint64_t last = 0;
    std::size_t torn = 0, killed_mid_write = 0;
    for (int round = 0; round < 16; ++round) {
      const std::uint64_t first = last + 1;
      const pid_t writer = kjit::test::spawn_tool("kjit_cache_file_io",
                                                  {"loop", target.string(), std::to_string(k_size), std::to_string(first)});
      REQUIRE(writer > 0);
      // Let it publish at least one version, reading along (a reader never sees a part).
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      for (;;) {
        const auto f = read_file(target);
        const auto v = kjit::test::version_of(f.bytes);
        if (!v) ++torn;
        if (v && *v >= first) break;
        if (std::chrono::steady_clock::now() > deadline) break;
      }
      // Then kill it: in odd rounds as soon as a temporary shows (in the middle of a write), in
      // even ones at a random point.
      if (round % 2 == 1) {
        while (temporaries_in(dir.path()) == 0 && std::chrono::steady_clock::now() < deadline) {
        }
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 40)(gen)));
      }
      ::kill(writer, SIGKILL);
      int status = 0;
      ::waitpid(writer, &status, 0);
      REQUIRE(WIFSIGNALED(status));
      const auto after = kjit::test::version_of(read_file(target).bytes);
      REQUIRE_MESSAGE(after, "round " << round << ": the target is not one whole version after SIGKILL");
      CHECK(*after >= first);
      last = *after;
      // A killed writer may leave its temporary (prune removes stale ones), never more than one.
      const std::size_t temps = temporaries_in(dir.path());
      CHECK(temps <= 1);
      killed_mid_write += temps;
      for (const auto& n : names_in(dir.path())) {
        if (n != "target") std::filesystem::remove(dir / n);
      }
    }
    CHECK(torn == 0);
    MESSAGE(killed_mid_write << " of 16 kills landed in the middle of a write");
  }

  TEST_CASE("a write that fails leaves the old content and no temporary") {
    TempDir dir;
    const std::string old = kjit::test::versioned_content(1, 1000);
    SUBCASE("a folder the user may not write to: the error names the file and why") {
      const auto folder = dir / "closed";
      std::filesystem::create_directory(folder);
      kjit::test::write_file(folder / "target", old);
      ::chmod(dir.path().c_str(), 0755);
      ::chmod(folder.c_str(), 0755);  // root's: the unprivileged user reads, never writes
      ::chmod((folder / "target").c_str(), 0666);  // even a file it may write is replaced only by rename
      const auto r = as_nobody("write " + (folder / "target").string() + " 100000 2");
      CHECK(r.code == 1);
      CHECK(r.out.find((folder / "target").string()) != std::string::npos);
      CHECK(r.out.find("Permission denied") != std::string::npos);
      CHECK(kjit::test::read_file(folder / "target") == old);
      CHECK(names_in(folder) == std::vector<std::string>{"target"});
    }
    SUBCASE("a rename that fails: the target is a folder") {
      std::filesystem::create_directory(dir / "target");
      kjit::test::write_file(dir / "target" / "inside", old);
      const auto written = write_file_atomically(dir / "target", old);
      REQUIRE_FALSE(written);
      CHECK(written.error().message.find((dir / "target").string()) != std::string::npos);
      CHECK(names_in(dir.path()) == std::vector<std::string>{"target"});
    }
    SUBCASE("a write past RLIMIT_FSIZE") {
      kjit::test::write_file(dir / "target", old);
      const std::string failures = kjit::test::run_in_child([&]() -> std::string {
        rlimit limit{64 * 1024, 64 * 1024};
        if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return "setrlimit failed";
        const auto written = write_file_atomically(dir / "target", kjit::test::versioned_content(2, 1 << 20));
        if (written) return "a write past RLIMIT_FSIZE succeeded";
        if (written.error().message.find("File too large") == std::string::npos) {
          return "unexpected message: " + written.error().message;
        }
        return {};
      });
      CHECK_MESSAGE(failures.empty(), failures);
      CHECK(kjit::test::read_file(dir / "target") == old);
      CHECK(names_in(dir.path()) == std::vector<std::string>{"target"});
    }
  }
}
