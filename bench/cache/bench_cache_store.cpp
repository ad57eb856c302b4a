// bench_cache_store: how the disk store scales. Prints medians for
//   - get (hit) and get (miss) in stores of 10, 1k, 10k and 100k entries, next to the floor of
//     a plain open + read + close of the same entry file (what a hit cannot beat);
//   - prune of a store of 100,000 entries: a scan that removes nothing, and removing all of them.
// CPU only; links cache/ alone. Usage: bench_cache_store [--dir DIR] [--entry-bytes N] [--quick]
// (DIR: an existing folder, default the temporary folder; the bench works in a new folder inside it.)
#include "core/cache/store.hpp"
#include "core/cache/store_maintenance.hpp"

#include "bench_util.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

using namespace kjit::cache;
using namespace kjit::system;
using Clock = std::chrono::steady_clock;

namespace {

Key key_of(std::uint64_t i) { return Hasher(1).field("bench", i).finish(); }

Entry entry_of(std::uint64_t i, std::size_t cubin_bytes) {
  Entry e;
  e.set(SectionKind::cubin, kjit::bench_util::random_bytes(i, cubin_bytes));
  e.set(SectionKind::ptx, fmt::format("// ptx {}\n", i));
  e.set(SectionKind::meta, fmt::format("{{\"i\":{}}}", i));
  return e;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

template <class F>
double micros(F&& f) {
  const auto t0 = Clock::now();
  f();
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

void fill(Store& store, std::uint64_t from, std::uint64_t to, std::size_t cubin_bytes) {
  for (std::uint64_t i = from; i < to; ++i) {
    const PutResult r = store.put(key_of(i), entry_of(i, cubin_bytes));
    if (!r.stored) {
      fmt::print(stderr, "{}\n", r.message);
      std::exit(2);
    }
  }
}

std::string raw_read(const std::filesystem::path& p) {
  std::string out;
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path base = std::filesystem::temp_directory_path();
  std::size_t cubin_bytes = 4 * 1024;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--dir" && i + 1 < argc) base = argv[++i];
    else if (a == "--entry-bytes" && i + 1 < argc) cubin_bytes = std::stoull(argv[++i]);
    else if (a == "--quick") quick = true;
    else {
      fmt::print(stderr, "usage: bench_cache_store [--dir DIR] [--entry-bytes N] [--quick]\n");
      return 2;
    }
  }
  std::string pattern = (base / "kjit-bench-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    fmt::print(stderr, "bench_cache_store: creating a temporary folder in {}: {} (--dir takes an existing "
               "folder)\n", base.string(), std::strerror(errno));
    return 2;
  }
  const std::filesystem::path root = pattern;
  const std::uint64_t big = quick ? 20'000 : 100'000;
  const int lookups = 2000;
  std::mt19937_64 rng(42);

  fmt::print("kjit cache store benchmark: cubin {} bytes per entry, folder {}\n", cubin_bytes, root.string());
  fmt::print("{:>9} {:>12} {:>12} {:>12} {:>14} {:>12}\n", "entries", "hit median", "hit p90", "miss median",
             "raw read med.", "hit / raw");
  Store store({.dir = root / "lookup", .max_size = 0});
  std::uint64_t filled = 0;
  for (const std::uint64_t n : {std::uint64_t{10}, std::uint64_t{1000}, std::uint64_t{10'000}, big}) {
    fill(store, filled, n, cubin_bytes);
    filled = n;
    std::vector<double> hit, miss, raw;
    for (int i = 0; i < lookups; ++i) {
      const std::uint64_t k = rng() % n;
      const Key key = key_of(k);
      // Alternate which goes first, so that neither always finds the other's warm dentry.
      auto time_raw = [&] { raw.push_back(micros([&] { raw_read(store.entry_path(key)); })); };
      auto time_hit = [&] {
        hit.push_back(micros([&] {
          if (store.get(key).outcome != GetResult::Outcome::hit) std::exit(3);
        }));
      };
      if (i % 2 == 0) {
        time_raw();
        time_hit();
      } else {
        time_hit();
        time_raw();
      }
      miss.push_back(micros([&] { store.get(key_of(n + 1'000'000 + k)); }));
    }
    fmt::print("{:>9} {:>10.1f}us {:>10.1f}us {:>10.1f}us {:>12.1f}us {:>11.2f}x\n", n, median(hit),
               percentile(hit, 0.9), median(miss), median(raw), median(hit) / median(raw));
  }

  // Prune: the lookup store (all `big` entries) is pruned twice per round: a scan that removes
  // nothing, then removal of every entry in one prune. Later rounds refill it first.
  const int rounds = quick ? 1 : 3;
  fmt::print("\nprune of {} entries, {} round(s)\n", big, rounds);
  std::vector<double> scan_only, remove_half, remove_all;
  for (int round = 0; round < rounds; ++round) {
    if (round > 0) fill(store, 0, big, cubin_bytes);
    StoreMaintenance maintenance(store.folder());
    const Usage before = maintenance.usage();
    PruneResult r;
    scan_only.push_back(micros([&] { r = maintenance.prune(before.bytes + 1); }) / 1000);
    if (r.removed_entries != 0 || r.kept_entries != big) {
      fmt::print(stderr, "scan-only prune removed {} kept {}\n", r.removed_entries, r.kept_entries);
      return 3;
    }
    // Down to half the bytes: the least recently used half goes.
    remove_half.push_back(micros([&] { r = maintenance.prune(before.bytes / 2); }) / 1000);
    const auto half_removed = r.removed_entries;
    if (half_removed == 0 || r.kept_entries == 0) {
      fmt::print(stderr, "half prune removed {} kept {}\n", r.removed_entries, r.kept_entries);
      return 3;
    }
    remove_all.push_back(micros([&] { r = maintenance.prune(1); }) / 1000);
    if (r.removed_entries + half_removed != static_cast<std::uint64_t>(big) || r.kept_entries != 0) {
      fmt::print(stderr, "full prune removed {} of {}\n", r.removed_entries + half_removed, big);
      return 3;
    }
    {
      // Refill and remove everything in one prune, for the worst case.
      fill(store, 0, big, cubin_bytes);
      remove_all.back() = micros([&] { r = maintenance.prune(1); }) / 1000;
      if (r.removed_entries != static_cast<std::uint64_t>(big)) {
        fmt::print(stderr, "full prune removed {} of {}\n", r.removed_entries, big);
        return 3;
      }
    }
    fmt::print("  round {}: scan (removes nothing) {:8.1f} ms, down to half ({} removed) {:8.1f} ms, remove all {} "
               "{:8.1f} ms\n", round + 1, scan_only.back(), half_removed, remove_half.back(), big, remove_all.back());
  }
  fmt::print("  median: scan {:.1f} ms, down to half {:.1f} ms, remove all {:.1f} ms\n", median(scan_only),
             median(remove_half), median(remove_all));
  std::filesystem::remove_all(root);
  return 0;
}
