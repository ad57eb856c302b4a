// kjit::cache bundles (cache/bundle.hpp) on real files: an export imports whole into an empty
// store, with every entry checked; truncated, bit-flipped, partial, spliced and re-signed archives
// are refused whole, leaving the store byte for byte as it was; a process killed after the check
// leaves a journal the next import reports and finishes; one import at a time; an archive changed
// during an import stops it. Random inputs: the seed is printed with every failure.
#include "core/cache/bundle.hpp"
#include "core/cache/remote/signer.hpp"
#include "core/cache/store.hpp"
#include "support/temp_dir.hpp"
#include "tests/unit/test_cache_support.hpp"
#include "support/store_parts.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <random>
#include <set>

using namespace kjit;
using namespace kjit::cache;

namespace {

std::uint64_t seed_of_test() {
  static const std::uint64_t seed = std::random_device{}();
  return seed;
}

// Every file under `dir` (entries, notes, usage, stats; not lock files, which come and go) with
// its bytes: what "the store is unchanged" compares.
std::map<std::string, std::string> snapshot(const std::filesystem::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file() || e.path().parent_path().filename() == "locks") continue;
    out[std::filesystem::relative(e.path(), dir).string()] = test::read_file(e.path());
  }
  return out;
}

struct Fixture {
  test::TempDir tmp;
  std::mt19937_64 rng{seed_of_test()};

  Store store(const std::string& name) { return Store(StoreConfig{(tmp / name).string(), 0}); }

  // `n` entries of random keys and sizes (64 B to 20 KiB) put into `s`; their keys.
  std::vector<Key> fill(Store& s, int n) {
    std::vector<Key> keys;
    for (int i = 0; i < n; ++i) {
      const Key key = test::test_key(rng());
      REQUIRE(s.put(key, test::test_entry(key, 64 + rng() % 20000)).stored);
      keys.push_back(key);
    }
    return keys;
  }

  std::string bundle(Store& s, const std::string& name, const BundleSign& sign = {}) {
    BundleExportOptions o;
    o.toolkit = "13.0";
    o.kjit = "test";
    o.sign = sign;
    const std::string file = (tmp / name).string();
    auto r = export_bundle(s, file, o);
    REQUIRE_MESSAGE(r, (r ? "" : r.error().message));
    return file;
  }
};

BundleSign sign_with(const Signer& signer) {
  return [&signer](std::string_view m) {
    return BundleSignature{signer.scheme() == Signer::Scheme::ed25519 ? BundleScheme::ed25519 : BundleScheme::hmac_sha256,
                           signer.sign(m)};
  };
}

BundleVerify verify_with(const Signer& signer) {
  return [&signer](const BundleSignature& sig, std::string_view m) -> system::Result<void> {
    if (sig.scheme == BundleScheme::none) return system::Failure{"unsigned"};
    if (!signer.verify(sig.bytes, m)) return system::Failure{"signature not valid"};
    return {};
  };
}

// Changes one byte of `file` in place (its bits flipped).
void flip_byte(const std::string& file, std::uint64_t offset) {
  const int fd = ::open(file.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  char byte = 0;
  REQUIRE(::pread(fd, &byte, 1, static_cast<off_t>(offset)) == 1);
  byte = static_cast<char>(~byte);
  REQUIRE(::pwrite(fd, &byte, 1, static_cast<off_t>(offset)) == 1);
  ::close(fd);
}

}  // namespace

TEST_SUITE("Bundle") {
  TEST_CASE("an export imports whole into an empty store and a second import skips every entry") {
    INFO("seed " << seed_of_test());
    Fixture f;
    Store a = f.store("a");
    const auto keys = f.fill(a, 150);
    const std::string file = f.bundle(a, "all.kjb");

    Store b = f.store("b");
    auto r = import_bundle(b, file, {});
    REQUIRE_MESSAGE(r, (r ? "" : r.error().message));
    CHECK(r->manifest.entries == keys.size());
    CHECK(r->manifest.toolkit == "13.0");
    CHECK(r->manifest.generation.size() == 32);
    CHECK(r->written == keys.size());
    CHECK(r->present == 0);
    CHECK_FALSE(r->earlier);
    for (const Key& k : keys) {
      GetResult g = b.get(k);
      REQUIRE(g.outcome == GetResult::Outcome::hit);
      CHECK(test::entry_matches(*g.entry, k));
    }
    CHECK(kjit::test::maintenance_of(b).verify().damaged.empty());
    CHECK(kjit::test::maintenance_of(b).usage().entries == keys.size());
    CHECK_FALSE(kjit::test::notes_of(b).read("import").value().has_value());  // no journal left

    auto again = import_bundle(b, file, {});
    REQUIRE(again);
    CHECK(again->written == 0);
    CHECK(again->present == keys.size());
    CHECK(again->manifest.generation == r->manifest.generation);
    // Another export is another generation.
    CHECK(f.bundle(a, "again.kjb") != file);
    auto other = import_bundle(b, (f.tmp / "again.kjb").string(), {.check_only = true});
    REQUIRE(other);
    CHECK(other->manifest.generation != r->manifest.generation);
  }

  TEST_CASE("a bundle made in memory is the file's format and imports from memory with the same checks") {
    INFO("seed " << seed_of_test());
    Fixture f;
    Store a = f.store("a");
    const auto keys = f.fill(a, 40);
    const Signer ci = Signer::ed25519(std::string(Signer::k_seed_size, '\x33'), {});
    std::string bytes;
    auto made = export_bundle_bytes(a, bytes, {.sign = sign_with(ci)});
    REQUIRE(made);
    CHECK(made->file_size == bytes.size());
    CHECK(bytes.substr(0, 8) == "KJITBNDL");
    CHECK(bytes.substr(bytes.size() - 8) == "KJBNDONE");
    // The same bytes as a file import as the file does, and from memory as well.
    test::write_file(f.tmp / "mem.kjb", bytes);
    Store b = f.store("b");
    auto from_file = import_bundle(b, (f.tmp / "mem.kjb").string(), {.verify = verify_with(ci), .check_only = true});
    REQUIRE(from_file);
    CHECK(from_file->manifest.entries == keys.size());
    auto from_memory = import_bundle_bytes(b, bytes, {.verify = verify_with(ci), .source = "m in http://x"});
    REQUIRE_MESSAGE(from_memory, (from_memory ? "" : from_memory.error().message));
    CHECK(from_memory->written == keys.size());
    for (const Key& k : keys) CHECK(b.get(k).outcome == GetResult::Outcome::hit);
    // Cut short or altered in memory: refused whole, naming the source.
    Store c = f.store("c");
    for (int i = 0; i < 10; ++i) {
      std::string bad = bytes;
      if (i % 2 == 0) bad.resize(f.rng() % bytes.size());
      else bad[f.rng() % bad.size()] ^= static_cast<char>(1 << (f.rng() % 8));
      auto r = import_bundle_bytes(c, bad, {.verify = verify_with(ci), .source = "m in http://x"});
      REQUIRE_FALSE(r);
      CHECK(r.error().message.find("the bundle m in http://x is refused") == 0);
      CHECK(kjit::test::maintenance_of(c).list().empty());
    }
  }

  TEST_CASE("an export selects by last use and content and leaves the last use alone") {
    INFO("seed " << seed_of_test());
    Fixture f;
    Store a = f.store("a");
    const auto keys = f.fill(a, 20);
    const auto before = kjit::test::maintenance_of(a).list();
    BundleExportOptions o;
    std::set<std::string> picked;
    o.pick = [&](const EntryInfo& e) { return e.key.bytes[0] % 2 == 0; };
    o.keep = [&](const Key& k, std::string_view bytes, const std::vector<SectionRef>& sections) {
      CHECK_FALSE(sections.empty());
      CHECK(parse(bytes).key == k);
      picked.insert(k.hex());
      return true;
    };
    auto r = export_bundle(a, (f.tmp / "half.kjb").string(), o);
    REQUIRE(r);
    std::size_t even = 0;
    for (const Key& k : keys) even += k.bytes[0] % 2 == 0;
    CHECK(r->manifest.entries == even);
    CHECK(picked.size() == even);
    const auto after = kjit::test::maintenance_of(a).list();
    REQUIRE(after.size() == before.size());
    for (std::size_t i = 0; i < after.size(); ++i) CHECK(after[i].last_use == before[i].last_use);
  }

  TEST_CASE("truncated bit-flipped partial and spliced bundles are refused whole and the store stays as it was") {
    INFO("seed " << seed_of_test());
    Fixture f;
    Store a = f.store("a");
    f.fill(a, 40);
    const std::string file = f.bundle(a, "good.kjb");
    const std::string good = test::read_file(file);
    Store b = f.store("b");
    f.fill(b, 5);  // the target is not empty: what it holds must stay as it is
    const auto before = snapshot(f.tmp / "b");

    auto refused = [&](const std::string& bytes, std::string_view what) {
      INFO(what);
      const std::string path = (f.tmp / "bad.kjb").string();
      test::write_file(path, bytes);
      auto r = import_bundle(b, path, {});
      REQUIRE_FALSE(r);
      CHECK(r.error().message.find("refused") != std::string::npos);
      CHECK(snapshot(f.tmp / "b") == before);
      return r.error().message;
    };
    // Cut short anywhere: the completion marker is missing.
    for (int i = 0; i < 12; ++i) {
      const std::size_t cut = f.rng() % good.size();
      const std::string why = refused(good.substr(0, cut), fmt::format("cut at {}", cut));
      CHECK((why.find("completion marker") != std::string::npos || why.find("truncated") != std::string::npos));
    }
    CHECK(refused(good.substr(0, good.size() - 1), "last byte missing").find("completion marker") != std::string::npos);
    // A flipped bit anywhere: the header, a record, the manifest, the trailer or its signature.
    for (int i = 0; i < 40; ++i) {
      std::string bad = good;
      const std::size_t at = i < 4 ? (good.size() - 1 - f.rng() % 100) : f.rng() % good.size();
      bad[at] = static_cast<char>(bad[at] ^ (1 << (f.rng() % 8)));
      refused(bad, fmt::format("bit flipped at byte {}", at));
    }
    // Partial: records dropped from the middle, the trailer kept.
    const std::size_t first_end = 32 + 8 + static_cast<std::size_t>(good[32] & 0xff) +
                                  (static_cast<std::size_t>(good[33] & 0xff) << 8) +
                                  (static_cast<std::size_t>(good[34] & 0xff) << 16);
    refused(good.substr(0, 32) + good.substr(first_end), "the first record dropped");
    // Two bundles spliced: this one's head, another's tail.
    Store c = f.store("c");
    f.fill(c, 40);
    const std::string other = test::read_file(f.bundle(c, "other.kjb"));
    refused(good.substr(0, good.size() / 2) + other.substr(other.size() / 2), "two bundles spliced");
    refused(other.substr(0, 32) + good.substr(32), "another bundle's header");
    refused(std::string(good.size(), 'x'), "not a bundle");
    refused("", "empty");
  }

  TEST_CASE("signed bundles import only where their signature checks and a signed one needs a key") {
    INFO("seed " << seed_of_test());
    Fixture f;
    Store a = f.store("a");
    const auto keys = f.fill(a, 10);
    const Signer ci = Signer::ed25519(std::string(Signer::k_seed_size, '\x11'), {});
    const Signer stranger = Signer::ed25519(std::string(Signer::k_seed_size, '\x22'), {});
    const Signer hmac("fleet secret");
    const std::string signed_file = f.bundle(a, "ci.kjb", sign_with(ci));
    const std::string resigned = f.bundle(a, "stranger.kjb", sign_with(stranger));
    const std::string unsigned_file = f.bundle(a, "plain.kjb");
    const std::string hmac_file = f.bundle(a, "hmac.kjb", sign_with(hmac));
    Store b = f.store("b");
    const auto before = snapshot(f.tmp / "b");
    for (const auto& [file, verify, why] :
         std::vector<std::tuple<std::string, BundleVerify, std::string>>{{resigned, verify_with(ci), "re-signed"},
                                                                        {unsigned_file, verify_with(ci), "unsigned"},
                                                                        {hmac_file, verify_with(ci), "hmac"},
                                                                        {signed_file, {}, "no key here"},
                                                                        {signed_file, verify_with(hmac), "other scheme"}}) {
      INFO(why);
      auto r = import_bundle(b, file, {.verify = verify});
      CHECK_FALSE(r);
      CHECK(snapshot(f.tmp / "b") == before);
    }
    // The same bundle, its signature swapped for a valid one over another bundle: refused.
    std::string swapped = test::read_file(signed_file);
    const std::string donor = test::read_file(resigned);
    swapped.replace(swapped.size() - 12 - 64, 64, donor.substr(donor.size() - 12 - 64, 64));
    test::write_file(f.tmp / "swapped.kjb", swapped);
    CHECK_FALSE(import_bundle(b, (f.tmp / "swapped.kjb").string(), {.verify = verify_with(stranger)}));
    CHECK_FALSE(import_bundle(b, (f.tmp / "swapped.kjb").string(), {.verify = verify_with(ci)}));
    CHECK(snapshot(f.tmp / "b") == before);

    auto ok = import_bundle(b, signed_file, {.verify = verify_with(ci)});
    REQUIRE_MESSAGE(ok, (ok ? "" : ok.error().message));
    CHECK(ok->scheme == BundleScheme::ed25519);
    CHECK(ok->written == keys.size());
    CHECK(import_bundle(b, unsigned_file, {})->present == keys.size());  // no key: unsigned ones import
    CHECK(import_bundle(b, hmac_file, {.verify = verify_with(hmac)})->scheme == BundleScheme::hmac_sha256);
  }

  TEST_CASE("an import killed after its check leaves a valid store and the next import reports and finishes it") {
    INFO("seed " << seed_of_test());
    Fixture f;
    Store a = f.store("a");
    const auto keys = f.fill(a, 30);
    const std::string file = f.bundle(a, "all.kjb");
    const std::string dir = (f.tmp / "b").string();
    // A child that dies by SIGKILL right after the check, before its first entry is written.
    const pid_t pid = ::fork();
    if (pid == 0) {
      Store b(StoreConfig{dir, 0});
      (void)import_bundle(b, file, {.checked = [](const BundleManifest&) { ::kill(::getpid(), SIGKILL); }});
      ::_exit(0);
    }
    REQUIRE(test::wait_for(pid, std::chrono::seconds(20)) == 128 + SIGKILL);
    Store b = f.store("b");
    auto journal = read_import_journal(b);
    REQUIRE(journal);
    CHECK(journal->entries == keys.size());
    CHECK(journal->source == file);
    CHECK(kjit::test::maintenance_of(b).verify().damaged.empty());

    // Another bundle's import reports it, and leaves it unfinished (not resumed).
    Store c = f.store("c");
    f.fill(c, 3);
    auto other = import_bundle(b, f.bundle(c, "c.kjb"), {});
    REQUIRE(other);
    REQUIRE(other->earlier);
    CHECK(other->earlier->generation == journal->generation);
    CHECK_FALSE(other->resumed);
    auto r = import_bundle(b, file, {});
    REQUIRE(r);
    CHECK_FALSE(r->earlier);  // the other import's journal replaced it, and it finished
    // So killed again, and resumed by the same bundle:
    const pid_t again = ::fork();
    if (again == 0) {
      Store d(StoreConfig{(f.tmp / "d").string(), 0});
      (void)import_bundle(d, file, {.checked = [](const BundleManifest&) { ::kill(::getpid(), SIGKILL); }});
      ::_exit(0);
    }
    REQUIRE(test::wait_for(again, std::chrono::seconds(20)) == 128 + SIGKILL);
    Store d = f.store("d");
    auto resumed = import_bundle(d, file, {});
    REQUIRE(resumed);
    REQUIRE(resumed->earlier);
    CHECK(resumed->resumed);
    CHECK(resumed->written == keys.size());
    CHECK_FALSE(read_import_journal(d));
  }

  TEST_CASE("one import at a time into a store and a bundle changed during its import stops it") {
    INFO("seed " << seed_of_test());
    Fixture f;
    Store a = f.store("a");
    const auto keys = f.fill(a, 20);
    const std::string file = f.bundle(a, "all.kjb");
    const std::string good = test::read_file(file);
    Store b = f.store("b");
    std::string second;
    auto r = import_bundle(b, file, {.checked = [&](const BundleManifest&) {
                                      Store other = f.store("b");
                                      auto o = import_bundle(other, file, {});
                                      second = o ? std::string("it ran") : o.error().message;
                                    }});
    REQUIRE(r);
    CHECK(second.find("another kjit cache import is running") != std::string::npos);

    // The last entry's bytes changed after the check: the entries before it are in, it is not.
    Store c = f.store("c");
    const std::size_t last_byte = good.rfind("kjit-bundle 1") - 100;  // inside the last entry
    auto changed = import_bundle(c, file, {.checked = [&](const BundleManifest&) { flip_byte(file, last_byte); }});
    REQUIRE_FALSE(changed);
    CHECK(changed.error().message.find("changed while it was imported") != std::string::npos);
    CHECK(kjit::test::maintenance_of(c).verify().damaged.empty());
    CHECK(kjit::test::maintenance_of(c).list().size() == keys.size() - 1);
    CHECK(read_import_journal(c));  // unfinished: the next import says so
  }
}
