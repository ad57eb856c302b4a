// cache::Store maintenance never follows a symbolic link inside the cache: a shard folder, an
// entry, a temporary, the locks folder or a lock file that is one is reported as skipped, and
// nothing it points to is read, changed or removed, by list, verify, prune, clear or the recount.
#include "core/cache/store.hpp"

#include "support/temp_dir.hpp"
#include "tests/unit/test_cache_support.hpp"
#include "support/store_parts.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

using kjit::test::TempDir;
using kjit::test::test_entry;
using kjit::test::test_key;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every file under `dir` with its bytes.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) out[e.path().string()] = slurp(e.path());
  }
  return out;
}

bool mentions(const std::vector<kjit::cache::Skipped>& skipped, const fs::path& path) {
  for (const auto& s : skipped) {
    if (s.path == path.string() && s.why.find("symbolic link") != std::string::npos) return true;
  }
  return false;
}

// A victim folder outside the cache with entry-shaped files: good copies of real entries, a
// damaged one, an old temporary, an unheld lock file and a file of another kind.
fs::path make_victim(const fs::path& root, kjit::cache::Store& store) {
  const fs::path victim = root / "victim";
  fs::create_directories(victim);
  for (std::uint64_t i = 100; i < 103; ++i) {
    const auto key = test_key(i);
    REQUIRE(store.put(key, test_entry(key, 5000 + i)).stored);
    fs::copy_file(store.entry_path(key), victim / store.entry_path(key).filename());
  }
  std::ofstream(victim / "0123456789abcdef0123456789abcd.kjit") << "damaged, entry-shaped";
  std::ofstream(victim / ".tmp.0123456789") << "a temporary, entry-shaped";
  fs::last_write_time(victim / ".tmp.0123456789", fs::file_time_type::clock::now() - std::chrono::hours(1));
  std::ofstream(victim / (test_key(100).hex() + ".lock"));
  std::ofstream(victim / "notes.txt") << "not kjit's";
  return victim;
}

bool mentions(const std::vector<kjit::cache::Skipped>& skipped, const fs::path& path, std::size_t times) {
  std::size_t n = 0;
  for (const auto& s : skipped) n += s.path == path.string();
  return n == times;
}

}  // namespace

TEST_SUITE("Store") {
  TEST_CASE("a shard folder that is a symlink is skipped by list verify prune and clear and its target stays") {
    TempDir dir;
    kjit::cache::Store store({(dir / "cache").string()});
    const fs::path victim = make_victim(dir.path(), store);
    const auto before = snapshot(victim);
    // The shard "ff" is a link to the victim folder.
    const fs::path shard = dir / "cache" / "ff";
    fs::remove_all(shard);
    fs::create_directory_symlink(victim, shard);
    const auto listed = kjit::test::maintenance_of(store).list_with_skipped();
    for (const auto& e : listed.entries) CHECK(e.path.string().find("/ff/") == std::string::npos);
    CHECK(mentions(listed.skipped, shard));
    CHECK(mentions(listed.skipped, shard, 1));  // once, not once per file behind it
    CHECK(listed.entries.size() == kjit::test::maintenance_of(store).list().size());
    auto v = kjit::test::maintenance_of(store).verify();
    CHECK(v.damaged.empty());
    CHECK(v.ok == listed.entries.size());
    CHECK(mentions(v.skipped, shard));
    CHECK(kjit::test::maintenance_of(store).usage().entries == listed.entries.size());  // the recount counts nothing behind the link
    auto p0 = kjit::test::maintenance_of(store).prune(0, std::chrono::seconds(0));  // no size bound, every entry old enough
    CHECK(mentions(p0.skipped, shard));
    CHECK(p0.removed_entries == listed.entries.size());
    for (std::uint64_t i = 200; i < 204; ++i) REQUIRE(store.put(test_key(i), test_entry(test_key(i), 4000)).stored);
    auto p = kjit::test::maintenance_of(store).prune(1);
    CHECK(mentions(p.skipped, shard));
    CHECK(p.kept_entries == 0);
    for (std::uint64_t i = 300; i < 304; ++i) REQUIRE(store.put(test_key(i), test_entry(test_key(i), 4000)).stored);
    auto c = kjit::test::maintenance_of(store).clear();
    CHECK(mentions(c.skipped, shard));
    CHECK(c.removed_entries > 0);
    CHECK(kjit::test::maintenance_of(store).list().empty());
    CHECK(listed.entries.size() > 0);
    CHECK(snapshot(victim) == before);  // byte for byte
    CHECK(fs::is_symlink(shard));       // left alone
  }

  TEST_CASE("an entry or a lock file that is a symlink is skipped and what it points to stays") {
    TempDir dir;
    kjit::cache::Store store({(dir / "cache").string()});
    const fs::path victim = make_victim(dir.path(), store);
    const auto key = test_key(7);
    REQUIRE(store.put(key, test_entry(key, 3000)).stored);
    // An entry-shaped link beside a real entry, pointing at the damaged file outside.
    const fs::path link = store.entry_path(key).parent_path() / "00000000000000000000000000000a.kjit";
    fs::create_symlink(victim / "0123456789abcdef0123456789abcd.kjit", link);
    // A lock file that is a link to a file outside.
    fs::create_directories(dir / "cache" / "locks");
    const fs::path lock_link = dir / "cache" / "locks" / "deadbeef.lock";
    fs::create_symlink(victim / "notes.txt", lock_link);
    // A temporary-shaped link, pointing at the old temporary outside.
    const fs::path temp_link = store.entry_path(key).parent_path() / ".tmp.link";
    fs::create_symlink(victim / ".tmp.0123456789", temp_link);
    // An unheld lock file that is a link to a lock-shaped file outside.
    const fs::path lock_link2 = dir / "cache" / "locks" / (test_key(100).hex() + ".lock");
    fs::create_symlink(victim / (test_key(100).hex() + ".lock"), lock_link2);
    const auto before = snapshot(victim);
    auto l = kjit::test::maintenance_of(store).list_with_skipped();
    CHECK(mentions(l.skipped, link));
    for (const auto& e : l.entries) CHECK(e.path != link);
    auto v = kjit::test::maintenance_of(store).verify();
    CHECK(v.damaged.empty());  // the damaged file outside is not read through the link
    CHECK(mentions(v.skipped, link));
    auto p = kjit::test::maintenance_of(store).prune(0, std::chrono::seconds(0));
    CHECK(mentions(p.skipped, link));
    CHECK(mentions(p.skipped, temp_link));
    CHECK(mentions(p.skipped, lock_link));
    CHECK(mentions(p.skipped, lock_link2));
    CHECK(p.removed_entries > 0);  // the real entries went
    auto c = kjit::test::maintenance_of(store).clear();
    CHECK(mentions(c.skipped, link));
    CHECK(mentions(c.skipped, temp_link));
    CHECK(mentions(c.skipped, lock_link));
    CHECK(mentions(c.skipped, lock_link2));
    CHECK(kjit::test::maintenance_of(store).list().empty());
    CHECK(fs::is_symlink(link));
    CHECK(fs::is_symlink(temp_link));
    CHECK(fs::is_symlink(lock_link));
    CHECK(fs::is_symlink(lock_link2));
    CHECK(snapshot(victim) == before);
  }

  TEST_CASE("a locks folder that is a symlink is skipped by prune and clear and its lock files stay") {
    TempDir dir;
    kjit::cache::Store store({(dir / "cache").string()});
    const fs::path victim = make_victim(dir.path(), store);
    const fs::path locks = dir / "cache" / "locks";
    fs::remove_all(locks);
    fs::create_directory_symlink(victim, locks);
    const auto before = snapshot(victim);
    auto p = kjit::test::maintenance_of(store).prune(0, std::chrono::seconds(0));
    CHECK(mentions(p.skipped, locks));
    CHECK(p.removed_entries == 3);
    auto c = kjit::test::maintenance_of(store).clear();
    CHECK(mentions(c.skipped, locks));
    CHECK(fs::is_symlink(locks));
    CHECK(snapshot(victim) == before);
  }
}
