// kjit::Cache (cache administration, tools/admin/cache_admin.cpp): what the store left alone while
// listing, verifying, pruning and clearing (symbolic links inside the cache) reaches the public
// results as `skipped`, and nothing a link points to is read, changed or removed.
#include <kjit/tools/cache.hpp>

#include "core/cache/store.hpp"
#include "support/temp_dir.hpp"
#include "tests/unit/test_cache_support.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace fs = std::filesystem;

namespace {

std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    out[e.path().string()] = s.str();
  }
  return out;
}

bool mentions(const std::vector<std::pair<fs::path, std::string>>& skipped, const fs::path& path) {
  for (const auto& [p, why] : skipped) {
    if (p == path && why.find("symbolic link") != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_SUITE("Cache") {
  TEST_CASE("list verify prune and clear report links inside the cache as skipped and leave what they point to") {
    kjit::test::TempDir dir;
    const fs::path cache = dir / "cache";
    kjit::cache::Store store({cache.string()});
    const fs::path victim = dir / "victim";
    fs::create_directories(victim);
    for (std::uint64_t i = 0; i < 6; ++i) {
      const auto key = kjit::test::test_key(i);
      REQUIRE(store.put(key, kjit::test::test_entry(key, 2000)).stored);
      fs::copy_file(store.entry_path(key), victim / store.entry_path(key).filename());
    }
    std::ofstream(victim / "0123456789abcdef0123456789abcd.kjit") << "damaged, entry-shaped";
    // A shard folder, an entry and a lock file that are links to the victim folder outside.
    const fs::path shard = cache / "ff";
    fs::remove_all(shard);
    fs::create_directory_symlink(victim, shard);
    const fs::path entry = store.entry_path(kjit::test::test_key(0)).parent_path() / "00000000000000000000000000000a.kjit";
    fs::create_symlink(victim / "0123456789abcdef0123456789abcd.kjit", entry);
    fs::create_directories(cache / "locks");
    const fs::path lock = cache / "locks" / "deadbeef.lock";
    fs::create_symlink(victim / "0123456789abcdef0123456789abcd.kjit", lock);
    const auto before = snapshot(victim);

    kjit::Cache admin(cache);
    const kjit::CacheListResult l = admin.list_with_skipped();
    CHECK(mentions(l.skipped, shard));
    CHECK(mentions(l.skipped, entry));
    CHECK(l.entries.size() == admin.list().size());
    CHECK_FALSE(l.entries.empty());
    const kjit::CacheVerifyResult v = admin.verify();
    CHECK(v.damaged.empty());
    CHECK(v.ok == l.entries.size());
    CHECK(mentions(v.skipped, shard));
    CHECK(mentions(v.skipped, entry));
    const kjit::CachePruneResult p = admin.prune(1);
    CHECK(p.removed_entries == l.entries.size());
    CHECK(mentions(p.skipped, shard));
    CHECK(mentions(p.skipped, entry));
    CHECK(mentions(p.skipped, lock));
    const kjit::CachePruneResult c = admin.clear();
    CHECK(mentions(c.skipped, shard));
    CHECK(mentions(c.skipped, entry));
    CHECK(mentions(c.skipped, lock));
    CHECK(fs::is_symlink(shard));
    CHECK(fs::is_symlink(entry));
    CHECK(fs::is_symlink(lock));
    CHECK(snapshot(victim) == before);
  }
}
