// kjit_cache_worker: a real process that uses a cache Store the way kjit's runtime does, for
// the cache tests (concurrency, SIGKILL, eviction under readers, persistent stats).
//
//   kjit_cache_worker protocol DIR LOG SEED NKEYS LOCK_TIMEOUT_MS CUBIN_BYTES
//       every key once, in random order: get -> miss -> lock -> get -> "compile" (a few ms of
//       sleep, one line "HEX PID" appended to LOG) -> put -> unlock. Prints a summary.
//       Exit 0: fine; 1: an error or a wrong hit; 3: a damaged entry was seen (and removed).
//   kjit_cache_worker writer DIR SEED NKEYS CUBIN_BYTES
//       forever: lock a random key, dawdle, put it, unlock (to be SIGKILLed by the test).
//   kjit_cache_worker reader DIR NKEYS STOP_FILE
//       get random keys until STOP_FILE exists (60 s at most); exit 1 on anything but a correct
//       hit or a miss.
//   kjit_cache_worker stats DIR GETS
//       GETS gets of absent keys and one put, then StoreStats::flush.
//   kjit_cache_worker hold DIR KEY_INDEX
//       takes the key's lock, prints "locked", and sleeps until killed.
#include "core/cache/store.hpp"
#include "core/cache/store_stats.hpp"
#include "tests/unit/test_cache_support.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>

using namespace kjit;
using namespace std::chrono_literals;

namespace {

std::uint64_t arg_u64(char** argv, int i) { return std::stoull(argv[i]); }

int protocol(int argc, char** argv) {
  if (argc != 8) return 2;
  cache::Store store({.dir = argv[2], .max_size = 0});
  const std::string log = argv[3];
  std::mt19937_64 rng(arg_u64(argv, 4) ^ static_cast<std::uint64_t>(getpid()));
  const std::uint64_t nkeys = arg_u64(argv, 5);
  const auto lock_timeout = std::chrono::milliseconds(arg_u64(argv, 6));
  const std::size_t cubin_bytes = arg_u64(argv, 7);

  std::vector<std::uint64_t> order(nkeys);
  for (std::uint64_t i = 0; i < nkeys; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  int hits = 0, compiled = 0, waited = 0, damaged = 0, timeouts = 0, errors = 0;
  auto check = [&](const cache::GetResult& r, const cache::Key& key) {
    using O = cache::GetResult::Outcome;
    if (r.outcome == O::hit && !test::entry_matches(*r.entry, key)) {
      std::fprintf(stderr, "WRONG HIT for %s\n", key.hex().c_str());
      ++errors;
    } else if (r.outcome == O::damaged) {
      std::fprintf(stderr, "damaged: %s\n", r.message.c_str());
      ++damaged;
    } else if (r.outcome == O::error) {
      std::fprintf(stderr, "error: %s\n", r.message.c_str());
      ++errors;
    }
    return r.outcome == O::hit;
  };
  for (std::uint64_t i : order) {
    const cache::Key key = test::test_key(i);
    if (check(store.get(key), key)) {
      ++hits;
      continue;
    }
    auto lock = store.lock(key, lock_timeout, {}, 5s);
    if (!lock) {
      ++timeouts;  // past the bound: compile by ourselves
    } else if (check(store.get(key), key)) {
      ++waited;
      continue;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(1000 + rng() % 4000));
    const std::string line = fmt::format("{} {}\n", key.hex(), getpid());
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 || ::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) ++errors;
    if (fd >= 0) ::close(fd);
    ++compiled;
    const cache::PutResult put = store.put(key, test::test_entry(key, cubin_bytes));
    if (!put.stored) {
      std::fprintf(stderr, "put failed: %s\n", put.message.c_str());
      ++errors;
    }
  }
  std::printf("hits=%d compiled=%d waited=%d damaged=%d timeouts=%d errors=%d\n", hits, compiled, waited, damaged,
              timeouts, errors);
  return errors ? 1 : damaged ? 3 : 0;
}

int writer(int argc, char** argv) {
  if (argc != 6) return 2;
  cache::Store store({.dir = argv[2], .max_size = 0});
  std::mt19937_64 rng(arg_u64(argv, 3) ^ static_cast<std::uint64_t>(getpid()));
  const std::uint64_t nkeys = arg_u64(argv, 4);
  const std::size_t cubin_bytes = arg_u64(argv, 5);
  for (;;) {
    const cache::Key key = test::test_key(rng() % nkeys);
    auto lock = store.lock(key, 10s);
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
    store.put(key, test::test_entry(key, cubin_bytes));
  }
}

int reader(int argc, char** argv) {
  if (argc != 5) return 2;
  cache::Store store({.dir = argv[2], .max_size = 0});
  const std::uint64_t nkeys = arg_u64(argv, 3);
  const std::string stop_file = argv[4];
  std::mt19937_64 rng(static_cast<std::uint64_t>(getpid()));
  const auto end = std::chrono::steady_clock::now() + 60s;
  std::uint64_t hits = 0, misses = 0;
  while (std::chrono::steady_clock::now() < end && ::access(stop_file.c_str(), F_OK) != 0) {
    const cache::Key key = test::test_key(rng() % nkeys);
    const cache::GetResult r = store.get(key);
    switch (r.outcome) {
      case cache::GetResult::Outcome::hit:
        if (!test::entry_matches(*r.entry, key)) {
          std::printf("WRONG HIT %s\n", key.hex().c_str());
          return 1;
        }
        ++hits;
        break;
      case cache::GetResult::Outcome::miss: ++misses; break;
      default: std::printf("BAD OUTCOME: %s\n", r.message.c_str()); return 1;
    }
  }
  std::printf("hits=%llu misses=%llu\n", static_cast<unsigned long long>(hits),
              static_cast<unsigned long long>(misses));
  return 0;
}

int stats(int argc, char** argv) {
  if (argc != 4) return 2;
  cache::Store store({.dir = argv[2], .max_size = 0});
  const std::uint64_t gets = arg_u64(argv, 3);
  // A lookup counts no miss or hit (the compile service counts a request's): counted here as it would.
  for (std::uint64_t i = 0; i < gets; ++i) {
    if (store.get(test::test_key(1000000 + i)).outcome == cache::GetResult::Outcome::miss) ++store.stats().misses;
  }
  const cache::Key key = test::test_key(static_cast<std::uint64_t>(getpid()));
  if (!store.put(key, test::test_entry(key, 100)).stored) return 1;
  if (store.get(key).outcome != cache::GetResult::Outcome::hit) return 1;
  ++store.stats().hits;
  cache::StoreStats persistent(store.folder());
  if (auto flushed = persistent.flush(); !flushed) {
    std::fprintf(stderr, "%s\n", flushed.error().message.c_str());
    return 1;
  }
  return persistent.flush() ? 0 : 1;  // a second flush adds nothing
}

int hold(int argc, char** argv) {
  if (argc != 4) return 2;
  cache::Store store({.dir = argv[2], .max_size = 0});
  auto lock = store.lock(test::test_key(arg_u64(argv, 3)), 10s);
  if (!lock) return 1;
  std::printf("locked\n");
  std::fflush(stdout);
  for (;;) ::pause();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string command = argv[1];
  if (command == "protocol") return protocol(argc, argv);
  if (command == "writer") return writer(argc, argv);
  if (command == "reader") return reader(argc, argv);
  if (command == "stats") return stats(argc, argv);
  if (command == "hold") return hold(argc, argv);
  return 2;
}
