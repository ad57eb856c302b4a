// kjit cache ls | verify | prune | clear on a cache holding symbolic links: each link is one
// warning line on stderr and, with --json, an entry of the document's "skipped" (ls keeps its
// array of entries); the exit code is that of the cache without them; nothing a link points to
// is read, changed or removed.
#include "cache/store.hpp"
#include "support/helpers.hpp"
#include "support/temp_dir.hpp"
#include "tests/unit/test_cache_support.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {

const std::string k_kjit = std::string(KJIT_BINARY_DIR) + "/cli/kjit";

struct Run {
  int code = -1;
  std::string out, err;
};

// `kjit --cache-dir CACHE ARGS` with stdout and stderr.
Run run(const kjit::test::TempDir& dir, const std::string& args) {
  const fs::path err = dir / "stderr.txt";
  auto r = kjit::test::run_command(k_kjit + " --cache-dir " + (dir / "cache").string() + " " + args + " 2>" +
                                   err.string());
  return {r.code, r.out, kjit::test::read_file(err)};
}

std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) out[e.path().string()] = kjit::test::read_file(e.path());
  }
  return out;
}

bool warns(const std::string& err, const fs::path& path) {
  return err.find("kjit: warning: skipped " + path.string() + ": a symbolic link") != std::string::npos;
}

bool lists(const nlohmann::json& skipped, const fs::path& path) {
  for (const auto& s : skipped) {
    if (s["path"] == path.string() && s["reason"].get<std::string>().find("symbolic link") != std::string::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace

TEST_SUITE("cli cache") {
  TEST_CASE("cache commands warn about links inside the cache and leave what they point to") {
    kjit::test::TempDir dir;
    const fs::path cache = dir / "cache";
    kjit::cache::Store store({cache.string()});
    const fs::path victim = dir / "victim";
    fs::create_directories(victim);
    for (std::uint64_t i = 0; i < 4; ++i) {
      const auto key = kjit::test::test_key(i);
      REQUIRE(store.put(key, kjit::test::test_entry(key, 1000)).stored);
      fs::copy_file(store.entry_path(key), victim / store.entry_path(key).filename());
    }
    std::ofstream(victim / "0123456789abcdef0123456789abcd.kjit") << "damaged, entry-shaped";
    const fs::path shard = cache / "ff";
    fs::remove_all(shard);
    fs::create_directory_symlink(victim, shard);
    const fs::path lock = cache / "locks" / "deadbeef.lock";
    fs::create_directories(lock.parent_path());
    fs::create_symlink(victim / "0123456789abcdef0123456789abcd.kjit", lock);
    const auto before = snapshot(victim);
    const std::size_t entries = store.list().size();
    REQUIRE(entries > 0);

    Run verify = run(dir, "cache verify");
    CHECK(verify.code == 0);  // as for a clean cache: the damaged file behind the link is not read
    CHECK(verify.out.find(std::to_string(entries) + " ok, 0 damaged") != std::string::npos);
    CHECK(warns(verify.err, shard));
    Run verify_json = run(dir, "--json cache verify");
    CHECK(verify_json.code == 0);
    auto v = nlohmann::json::parse(verify_json.out);
    CHECK(v["damaged"].empty());
    CHECK(lists(v["skipped"], shard));
    CHECK(warns(verify_json.err, shard));

    Run ls = run(dir, "cache ls");
    CHECK(ls.code == 0);
    CHECK(warns(ls.err, shard));
    Run ls_json = run(dir, "--json cache ls");
    CHECK(ls_json.code == 0);
    CHECK(warns(ls_json.err, shard));
    auto l = nlohmann::json::parse(ls_json.out);
    REQUIRE(l.is_array());  // the document keeps its shape
    CHECK(l.size() == entries);

    Run prune = run(dir, "--json cache prune --max-size 1");
    CHECK(prune.code == 0);
    auto p = nlohmann::json::parse(prune.out);
    CHECK(p["removed_entries"] == entries);
    CHECK(lists(p["skipped"], shard));
    CHECK(lists(p["skipped"], lock));
    CHECK(warns(prune.err, lock));
    Run clear = run(dir, "cache clear");
    CHECK(clear.code == 0);
    CHECK(warns(clear.err, shard));
    CHECK(warns(clear.err, lock));

    CHECK(fs::is_symlink(shard));
    CHECK(fs::is_symlink(lock));
    CHECK(snapshot(victim) == before);
  }
}
