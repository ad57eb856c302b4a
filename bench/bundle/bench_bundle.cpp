// bench_bundle: `kjit cache import` of a warm bundle of N entries (10,000 by default), with every
// entry and the ed25519 signature checked, against its floor measured in the same run: reading
// the same bundle file once and writing each entry's bytes as a plain file of its own (open,
// write, close; no check, no signature, no rename, no usage accounting). Prints seconds, entries
// per second and the ratio for:
//   - the check alone (pass 1: completion marker, BLAKE2b over the archive, the signature, every
//     entry parsed and checksummed as a disk hit is);
//   - a whole import into an empty cache (check, then each entry re-hashed, looked up, published
//     through the store's atomic put with its usage accounting, under the journal);
//   - the same import into a cache that holds every entry (a resumed import: all skipped);
//   - the kjit CLI's import in a fresh process, when it was built (KJIT_CLI_PATH);
// and, beside them, the export and the unsigned and HMAC imports. The entries are synthetic: a
// random cubin of --entry-bytes (8 KiB by default, a small kernel's), a short PTX and meta.
// CPU only; links cache/ alone. Usage:
//   bench_bundle [--entries N] [--entry-bytes B] [--runs R] [--dir DIR]
// Each step into a folder of its own, their order rotated from run to run; medians of R.
#include "core/cache/bundle.hpp"
#include "core/cache/remote/signer.hpp"
#include "core/cache/store.hpp"

#include "bench_util.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

using namespace kjit::cache;
using kjit::bench_util::median;
using kjit::bench_util::now_us;
namespace fs = std::filesystem;

namespace {

Key key_of(std::uint64_t i) { return Hasher(1).field("bench bundle", i).finish(); }

Entry entry_of(std::uint64_t i, std::size_t cubin_bytes) {
  Entry e;
  e.set(SectionKind::cubin, kjit::bench_util::random_bytes(i, cubin_bytes));
  e.set(SectionKind::ptx, fmt::format("// ptx {}\n.visible .entry k{}() {{ ret; }}\n", i, i));
  e.set(SectionKind::meta, fmt::format("{{\"program\":\"k{}.cu\",\"arch\":\"sm_90\"}}", i));
  return e;
}

[[noreturn]] void die(const std::string& why) {
  fmt::print(stderr, "bench_bundle: {}\n", why);
  std::exit(2);
}

// The floor: the bundle read once, each entry written as a plain file into shard folders.
void plain_write(const std::string& bundle, const std::string& dir, const std::vector<std::pair<std::uint64_t, std::uint64_t>>& records) {
  const int in = ::open(bundle.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) die("opening the bundle");
  struct stat st{};
  ::fstat(in, &st);
  std::string bytes(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::read(in, bytes.data() + got, bytes.size() - got);
    if (n <= 0) die("reading the bundle");
    got += static_cast<std::size_t>(n);
  }
  ::close(in);
  const int top = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  for (unsigned s = 0; s < 256; ++s) ::mkdirat(top, fmt::format("{:02x}", s).c_str(), 0700);
  std::uint64_t i = 0;
  for (const auto& [offset, size] : records) {
    const std::string name = fmt::format("{:02x}/{:030x}.kjit", i % 256, i);
    const int fd = ::openat(top, name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || ::write(fd, bytes.data() + offset, size) != static_cast<ssize_t>(size)) die("writing " + name);
    ::close(fd);
    ++i;
  }
  ::close(top);
}

std::uint64_t get_le64(const std::string& s, std::size_t at) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t{static_cast<unsigned char>(s[at + i])} << (8 * i);
  return v;
}

struct Row {
  const char* what;
  std::vector<double> us;
};

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t entries = 10000;
  std::size_t entry_bytes = 8192;
  int runs = 5;
  std::string base = fs::temp_directory_path().string();
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--entries") entries = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--entry-bytes") entry_bytes = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--runs") runs = std::atoi(argv[i + 1]);
    else if (a == "--dir") base = argv[i + 1];
    else die("usage: bench_bundle [--entries N] [--entry-bytes B] [--runs R] [--dir DIR]");
  }
  const fs::path work = fs::path(base) / fmt::format("kjit-bench-bundle-{}", ::getpid());
  fs::create_directories(work);
  auto fresh = [&](const std::string& name) {
    fs::remove_all(work / name);
    return (work / name).string();
  };

  // The source cache and its bundles: ed25519 (CI's), HMAC, unsigned.
  Store source(StoreConfig{fresh("source"), 0});
  for (std::uint64_t i = 0; i < entries; ++i) {
    if (!source.put(key_of(i), entry_of(i, entry_bytes)).stored) die("filling the source cache");
  }
  const Signer::KeyPair pair = Signer::generate_ed25519();
  std::string seed;
  {
    const std::string hex = pair.secret_text.substr(pair.secret_text.find(':') + 1, 64);
    for (std::size_t i = 0; i < 64; i += 2) seed.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  const Signer ci = Signer::ed25519(seed, {});
  const Signer hmac("a fleet secret for the benchmark");
  auto sign_with = [](const Signer& s, BundleScheme scheme) {
    return [&s, scheme](std::string_view m) { return BundleSignature{scheme, s.sign(m)}; };
  };
  auto verify_with = [](const Signer& s) {
    return [&s](const BundleSignature& sig, std::string_view m) -> kjit::system::Result<void> {
      if (sig.scheme == BundleScheme::none || !s.verify(sig.bytes, m)) return kjit::system::Failure{"not signed by the key"};
      return {};
    };
  };
  const std::string ed_bundle = (work / "ed25519.kjb").string(), hmac_bundle = (work / "hmac.kjb").string(),
                    plain_bundle = (work / "plain.kjb").string();
  std::vector<double> export_us;
  std::uint64_t bundle_size = 0;
  for (int r = 0; r < runs; ++r) {
    const double t0 = now_us();
    auto e = export_bundle(source, ed_bundle, {.toolkit = "13.0", .kjit = "bench", .sign = sign_with(ci, BundleScheme::ed25519)});
    export_us.push_back(now_us() - t0);
    if (!e) die(e.error().message);
    bundle_size = e->file_size;
  }
  if (!export_bundle(source, hmac_bundle, {.sign = sign_with(hmac, BundleScheme::hmac_sha256)})) die("hmac export");
  if (!export_bundle(source, plain_bundle, {})) die("plain export");

  // Where each record's entry lies, for the floor (read from the file itself).
  std::vector<std::pair<std::uint64_t, std::uint64_t>> records;
  {
    std::string bytes(bundle_size, '\0');
    const int fd = ::open(ed_bundle.c_str(), O_RDONLY);
    if (fd < 0 || ::pread(fd, bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) die("reading");
    ::close(fd);
    std::uint64_t at = 32;
    for (std::uint64_t i = 0; i < entries; ++i) {
      const std::uint64_t n = get_le64(bytes, at);
      records.emplace_back(at + 8, n);
      at += 8 + n;
    }
  }
  const std::string pub_hex = pair.public_text.substr(8, 64);
  std::string pub;
  for (std::size_t i = 0; i < 64; i += 2) pub.push_back(static_cast<char>(std::stoi(pub_hex.substr(i, 2), nullptr, 16)));
  const Signer public_only = Signer::ed25519({}, {pub});

  Row floor{"floor: read bundle + write each entry as a file", {}};
  Row check{"check only (hash, ed25519, every entry)", {}};
  Row import{"import into an empty cache (ed25519)", {}};
  Row resumed{"import again: every entry present", {}};
  Row unsigned_import{"import, unsigned bundle", {}};
  Row hmac_import{"import, HMAC-SHA256 bundle", {}};
  Row cli{"kjit cache import (a fresh process)", {}};
  const std::string kjit_cli = KJIT_CLI_PATH;
  const bool have_cli = !kjit_cli.empty() && fs::exists(kjit_cli);
  const std::string pub_file = (work / "ci.pub").string();
  {
    FILE* f = std::fopen(pub_file.c_str(), "w");
    std::fputs(pair.public_text.c_str(), f);
    std::fclose(f);
  }
  // The steps, each into a folder of its own made before it is timed and removed after; their
  // order rotates from run to run, so that no step always follows the same one's writeback.
  auto timed = [](Row& row, const auto& body) {
    const double t0 = now_us();
    body();
    row.us.push_back(now_us() - t0);
  };
  std::vector<std::function<void()>> steps = {
      [&] {
        const std::string dir = fresh("floor");
        fs::create_directories(dir);
        timed(floor, [&] { plain_write(ed_bundle, dir, records); });
        fs::remove_all(dir);
      },
      [&] {
        Store target(StoreConfig{fresh("target"), 0});
        timed(check, [&] {
          if (!import_bundle(target, ed_bundle, {.verify = verify_with(public_only), .check_only = true})) die("check");
        });
        timed(import, [&] {
          auto i = import_bundle(target, ed_bundle, {.verify = verify_with(public_only)});
          if (!i || i->written != entries) die(i ? "not every entry written" : i.error().message);
        });
        timed(resumed, [&] {
          auto again = import_bundle(target, ed_bundle, {.verify = verify_with(public_only)});
          if (!again || again->present != entries) die("a second import wrote something");
        });
        fs::remove_all(work / "target");
      },
      [&] {
        Store u(StoreConfig{fresh("unsigned"), 0});
        timed(unsigned_import, [&] {
          if (!import_bundle(u, plain_bundle, {})) die("unsigned import");
        });
        fs::remove_all(work / "unsigned");
      },
      [&] {
        Store h(StoreConfig{fresh("hmac"), 0});
        timed(hmac_import, [&] {
          if (!import_bundle(h, hmac_bundle, {.verify = verify_with(hmac)})) die("hmac import");
        });
        fs::remove_all(work / "hmac");
      },
  };
  if (have_cli) {
    steps.push_back([&] {
      const std::string cache = fresh("cli");
      const std::string command = fmt::format(
          "KJIT_CACHE_MAX_SIZE=0 KJIT_REMOTE_PUBLIC_KEY_FILE={} {} --cache-dir {} -q cache import {} >/dev/null",
          pub_file, kjit_cli, cache, ed_bundle);
      timed(cli, [&] {
        if (std::system(command.c_str()) != 0) die("kjit cache import failed: " + command);
      });
      fs::remove_all(cache);
    });
  }
  for (int r = 0; r < runs; ++r) {
    for (std::size_t i = 0; i < steps.size(); ++i) steps[(i + static_cast<std::size_t>(r)) % steps.size()]();
  }

  fmt::print("bench_bundle: {} entries of {} cubin bytes (synthetic), bundle {:.1f} MiB, {} runs (medians)\n", entries,
             entry_bytes, static_cast<double>(bundle_size) / (1 << 20), runs);
  fmt::print("export (ed25519): {:.3f} s\n", median(export_us) / 1e6);
  const double floor_us = median(floor.us);
  for (const Row* row : {&floor, &check, &import, &resumed, &unsigned_import, &hmac_import, &cli}) {
    if (row->us.empty()) continue;
    const double us = median(row->us);
    fmt::print("{:<48} {:8.3f} s {:10.0f} entries/s   ratio {:5.2f}\n", row->what, us / 1e6,
               static_cast<double>(entries) / (us / 1e6), us / floor_us);
  }
  if (!have_cli) fmt::print("(the kjit CLI was not built: its row is left out)\n");
  fs::remove_all(work);
  return 0;
}
