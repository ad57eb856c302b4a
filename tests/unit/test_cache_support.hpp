// Helpers shared by the cache tests and the kjit_cache_* tool programs they start: keys and
// entries whose bytes follow from the key (so any process can check a hit), and running real
// processes with a bound on how long they may take. No doctest here: tools include it too.
#pragma once

#include "core/cache/entry.hpp"
#include "core/cache/key.hpp"
#include "../support/wait_process.hpp"  // beside this file, for the tool programs too

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <fcntl.h>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace kjit::test {

// Key number i of a test: deterministic, different for every i.
inline cache::Key test_key(std::uint64_t i) {
  return cache::Hasher(1).field("test-key", i).finish();
}

// `size` bytes that follow from the key alone (splitmix64 stream seeded by the key).
inline std::string key_bytes(const cache::Key& key, std::size_t size) {
  std::uint64_t state = 0;
  for (auto b : key.bytes) state = state * 131 + b;
  std::string out(size, '\0');
  for (std::size_t i = 0; i < size; ++i) {
    if (i % 8 == 0) {
      state += 0x9E3779B97F4A7C15ull;
      std::uint64_t z = state;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      state ^= z ^ (z >> 31);
    }
    out[i] = static_cast<char>(state >> (8 * (i % 8)));
  }
  return out;
}

// The entry a test "compile" of `key` produces.
inline cache::Entry test_entry(const cache::Key& key, std::size_t cubin_size) {
  cache::Entry e;
  e.set(cache::SectionKind::cubin, key_bytes(key, cubin_size));
  e.set(cache::SectionKind::ptx, "// ptx for " + key.hex() + "\n");
  e.set(cache::SectionKind::log, "");
  e.set(cache::SectionKind::meta, "key " + key.hex());
  return e;
}

// True when `e` is exactly what test_entry(key, any size) made.
inline bool entry_matches(const cache::Entry& e, const cache::Key& key) {
  const std::string* cubin = e.find(cache::SectionKind::cubin);
  const std::string* ptx = e.find(cache::SectionKind::ptx);
  const std::string* meta = e.find(cache::SectionKind::meta);
  return cubin && ptx && meta && *cubin == key_bytes(key, cubin->size()) && *ptx == "// ptx for " + key.hex() + "\n" &&
         *meta == "key " + key.hex();
}

#ifdef KJIT_TEST_TOOLS_DIR
// Starts tools/<tool> with `args`; stdout (and stderr) go to `output` when given.
inline pid_t spawn_tool(const std::string& tool, const std::vector<std::string>& args,
                        const std::string& output = {}) {
  const std::string program = std::string(KJIT_TEST_TOOLS_DIR) + "/" + tool;
  std::vector<std::string> all{program};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!output.empty()) {
      const int fd = ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
    }
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
  return pid;
}
#endif

// Runs `body` in a forked child (for privilege drops and resource limits that must not touch
// the test process) and returns what it returned: empty means success, otherwise the failures.
inline std::string run_in_child(const std::function<std::string()>& body) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string out;
    try {
      out = body();
    } catch (const std::exception& e) {
      out = std::string("exception: ") + e.what();
    }
    if (!out.empty()) {
      ssize_t ignored = ::write(fds[1], out.data(), out.size());
      (void)ignored;
    }
    ::_exit(out.empty() ? 0 : 1);
  }
  ::close(fds[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (out.empty() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) out = "child failed without a message";
  return out;
}

// Version `n` of a file of about `size` bytes: a header naming n and the size, one of four bodies
// (by n % 4, made once each), a trailer naming n again. A torn file (the head of one version and
// the tail of another, or one cut short) fails version_of.
inline std::string versioned_content(std::uint64_t n, std::size_t size) {
  static std::map<std::pair<std::uint64_t, std::size_t>, std::string> bodies;  // one thread per process here
  std::string& body = bodies[{n % 4, size}];
  if (body.size() != size) body = key_bytes(test_key(n % 4), size);
  return "kjit-version " + std::to_string(n) + " " + std::to_string(size) + "\n" + body + "\nend " +
         std::to_string(n) + "\n";
}

// The version `text` is whole content of, or nullopt.
inline std::optional<std::uint64_t> version_of(const std::string& text) {
  unsigned long long n = 0, size = 0;
  if (std::sscanf(text.c_str(), "kjit-version %llu %llu\n", &n, &size) != 2) return std::nullopt;
  if (text != versioned_content(n, static_cast<std::size_t>(size))) return std::nullopt;
  return n;
}

}  // namespace kjit::test
