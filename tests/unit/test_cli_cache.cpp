// kjit cache ls | verify | prune | clear on a cache holding symbolic links: each link is one
// warning line on stderr and, with --json, an entry of the document's "skipped" (ls keeps its
// array of entries); the exit code is that of the cache without them; nothing a link points to
// is read, changed or removed.
#include "core/cache/store.hpp"
#include "support/helpers.hpp"
#include "support/temp_dir.hpp"
#include "support/skip.hpp"
#include "tests/unit/test_cache_support.hpp"
#include "support/store_parts.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

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
  TEST_CASE("cache ls shows each entry's program, arch, kinds and last use") {
    kjit::test::TempDir dir;
    {
      std::ofstream(dir / "scale_ls.cu") << "extern \"C\" __global__ void scale(float* x) { x[0] *= 3.0f; }\n";
    }
    REQUIRE(run(dir, "compile " + (dir / "scale_ls.cu").string() + " --arch sm_90").code == 0);
    REQUIRE(run(dir, "compile " + (dir / "scale_ls.cu").string() + " --arch compute_80").code == 0);
    const Run text = run(dir, "cache ls");
    CHECK(text.code == 0);
    CHECK(text.out.find("scale_ls.cu  sm_90       cubin,ptx") != std::string::npos);  // aligned to compute_80
    CHECK(text.out.find("scale_ls.cu  compute_80  ptx") != std::string::npos);
    const Run js = run(dir, "--json cache ls");
    REQUIRE(js.code == 0);
    const auto doc = nlohmann::json::parse(js.out);
    REQUIRE(doc.size() == 2);
    std::map<std::string, nlohmann::json> by_arch;
    for (const auto& e : doc) by_arch[e["arch"].get<std::string>()] = e;
    REQUIRE(by_arch.count("sm_90") == 1);
    CHECK(by_arch["sm_90"]["program"].get<std::string>().ends_with("scale_ls.cu"));
    CHECK(by_arch["sm_90"]["kinds"] == nlohmann::json::array({"cubin", "ptx"}));
    CHECK(by_arch["compute_80"]["kinds"] == nlohmann::json::array({"ptx"}));
    CHECK(by_arch["sm_90"]["last_use"].get<long long>() > 0);
  }

  // #40 item 17: "removed 1 entries".
  TEST_CASE("cache prune and clear and ls count one entry and several entries in English") {
    kjit::test::TempDir dir;
    std::ofstream(dir / "one.cu") << "extern \"C\" __global__ void one(float* x) { x[0] *= 3.0f; }\n";
    REQUIRE(run(dir, "compile " + (dir / "one.cu").string() + " --arch sm_90").code == 0);
    CHECK(run(dir, "cache ls").out.find("\n1 entry\n") != std::string::npos);
    Run pruned = run(dir, "cache prune --max-size 1");
    CHECK_MESSAGE(pruned.out.find("removed 1 entry (") == 0, pruned.out);
    CHECK_MESSAGE(pruned.out.find("kept 0 entries (") != std::string::npos, pruned.out);
    REQUIRE(run(dir, "compile " + (dir / "one.cu").string() + " --arch sm_90").code == 0);
    REQUIRE(run(dir, "compile " + (dir / "one.cu").string() + " --arch sm_80").code == 0);
    CHECK(run(dir, "cache ls").out.find("\n2 entries\n") != std::string::npos);
    Run cleared = run(dir, "cache clear");
    CHECK_MESSAGE(cleared.out.find("removed 2 entries (") == 0, cleared.out);
    CHECK_MESSAGE(run(dir, "cache clear").out.find("removed 0 entries (") == 0, cleared.out);
  }

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
    const std::size_t entries = kjit::test::maintenance_of(store).list().size();
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

  // #30 item 7: on a read-only cache compile said "removed it", verify "damaged (removed)" and clear
  // "removed 0 entries" with exit 0, while the files were still there.
  TEST_CASE("on a cache this user cannot change compile verify prune and clear say what they could not remove") {
    if (::geteuid() != 0) {
      KJIT_SKIP("not root: skipped (the cache must belong to another user, root, to be read-only to this one)");
    }
    kjit::test::TempDir dir;
    ::chmod(dir.path().c_str(), 0755);
    kjit::test::write_file(dir / "a.cu", "extern \"C\" __global__ void a(float* x) { x[0] = 1.0f; }\n");
    kjit::test::write_file(dir / "b.cu", "extern \"C\" __global__ void b(float* x) { x[0] = 2.0f; }\n");
    Run made = run(dir, "--json compile --arch sm_90 " + (dir / "a.cu").string() + " " + (dir / "b.cu").string());
    REQUIRE(made.code == 0);
    const std::string b_key = nlohmann::json::parse(made.out)[1]["key"];
    const fs::path damaged = dir / "cache" / b_key.substr(0, 2) / (b_key.substr(2) + ".kjit");
    { std::ofstream(damaged, std::ios::binary | std::ios::trunc) << "KJIT damaged"; }
    // Root's cache, read-only to everyone else (a cache shipped in an image).
    for (const auto& e : fs::recursive_directory_iterator(dir / "cache")) {
      ::chmod(e.path().c_str(), e.is_directory() ? 0555 : 0444);
    }
    ::chmod((dir / "cache").c_str(), 0555);
    const auto before = snapshot(dir / "cache");
    const fs::path err = dir / "err.txt";
    ::chmod(dir.path().c_str(), 0777);  // the unprivileged user writes its stderr here
    auto as_user = [&](const std::string& args) {
      auto r = kjit::test::run_command("setpriv --reuid=54321 --regid=54321 --clear-groups " + k_kjit + " --cache-dir " +
                                       (dir / "cache").string() + " " + args + " 2>" + err.string());
      return Run{r.code, r.out, kjit::test::read_file(err)};
    };
    const std::string could_not = "could not remove " + damaged.string() + " (Permission denied)";
    Run compile = as_user("compile --arch sm_90 " + (dir / "b.cu").string());
    CHECK(compile.code == 0);  // compiled in memory
    CHECK_MESSAGE(compile.err.find(could_not) != std::string::npos, compile.err);
    CHECK(compile.err.find("removed it") == std::string::npos);
    Run verify = as_user("cache verify");
    CHECK(verify.code == 1);
    CHECK(verify.out.find("(removed)") == std::string::npos);
    CHECK_MESSAGE(verify.err.find(could_not) != std::string::npos, verify.err);
    Run verify_json = as_user("--json cache verify");
    CHECK(verify_json.code == 1);
    auto v = nlohmann::json::parse(verify_json.out);
    CHECK(v["damaged"][0]["removed"] == false);
    CHECK(v["not_removed"].size() == 1);
    Run prune = as_user("cache prune --max-size 1");
    CHECK(prune.code == 1);
    CHECK(prune.err.find("could not remove") != std::string::npos);
    Run clear = as_user("cache clear");
    CHECK(clear.code == 1);
    CHECK_MESSAGE(clear.err.find(could_not) != std::string::npos, clear.err);
    Run clear_json = as_user("--json cache clear");
    CHECK(clear_json.code == 1);
    CHECK(nlohmann::json::parse(clear_json.out)["not_removed"].size() == 2);
    CHECK(snapshot(dir / "cache") == before);
  }

  // #40 item 21: `--older-than 200000d` (548 years) and `1000000w` overflowed and removed every
  // entry, also those written a second ago.
  TEST_CASE("prune --older-than a huge age removes nothing: a duration saturates at 100 years") {
    kjit::test::TempDir dir;
    std::ofstream(dir / "k.cu") << "extern \"C\" __global__ void k(float* x) { x[0] = 2.0f; }\n";
    REQUIRE(run(dir, "compile --arch sm_90 " + (dir / "k.cu").string()).code == 0);
    auto entries = [&] { return nlohmann::json::parse(run(dir, "--json cache stats").out)["entries"].get<int>(); };
    REQUIRE(entries() == 1);
    for (const std::string& age : std::vector<std::string>{"200000d", "1000000w", "36525d", "1000000000000d",
                                                          std::string(400, '9') + "w"}) {
      INFO(age);
      const Run r = run(dir, "--json cache prune --older-than " + age);
      CHECK(r.code == 0);
      CHECK(nlohmann::json::parse(r.out)["removed_entries"] == 0);
      CHECK(entries() == 1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(run(dir, "cache prune --older-than 0s").code == 0);  // the other edge: everything used before now
    CHECK(entries() == 0);
  }

  // #52 item 20: cache ls had no header row, and three rows of one file and arch did not say how
  // they differ; cache stats' "remote http" row was one column off.
  TEST_CASE("cache ls has a header row and tells entries of one file and arch apart by their options") {
    kjit::test::TempDir dir;
    const std::string file = (dir / "same.cu").string();
    std::ofstream(dir / "same.cu") << "extern \"C\" __global__ void k(float* x) { x[0] *= " << (std::random_device{}() % 1000 + 2)
                                   << ".0f; }\n";
    for (const std::string flags : {"", "-DWIDTH=4", "--use_fast_math"}) {
      REQUIRE(run(dir, "compile --arch sm_90 " + file + " -- " + flags).code == 0);
    }
    const Run text = run(dir, "cache ls");
    REQUIRE(text.code == 0);
    std::vector<std::string> lines;
    std::istringstream in(text.out);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    REQUIRE(lines.size() == 5);  // header, three entries, the count
    CHECK(lines[0].starts_with("KEY "));
    for (const std::string column : {"SIZE", "LAST USE", "PROGRAM", "ARCH", "KINDS", "OPTIONS"}) {
      CHECK_MESSAGE(lines[0].find(column) != std::string::npos, column);
    }
    // Every column starts where its header does.
    const std::size_t program = lines[0].find("PROGRAM");
    const std::size_t options = lines[0].find("OPTIONS");
    std::set<std::string> distinct;
    for (std::size_t i = 1; i <= 3; ++i) {
      CAPTURE(lines[i]);
      CHECK(lines[i].substr(program, file.size()) == file);
      REQUIRE(lines[i].size() > options);
      CHECK(lines[i][options - 1] == ' ');
      const std::string row_options = lines[i].substr(options);
      CHECK(row_options.find("--gpu-architecture") == std::string::npos);  // the arch has its column
      distinct.insert(row_options);
    }
    CHECK(distinct.size() == 3);
    CHECK(text.out.find("WIDTH=4") != std::string::npos);
    CHECK(text.out.find("--use_fast_math") != std::string::npos);
    CHECK(lines[4] == "3 entries");
    const auto doc = nlohmann::json::parse(run(dir, "--json cache ls").out);
    REQUIRE(doc.size() == 3);
    for (const auto& e : doc) CHECK(e["options"].is_array());

    // The stats rows: every value starts in one column.
    const Run stats = run(dir, "cache stats");
    REQUIRE(stats.code == 0);
    std::istringstream rows(stats.out);
    std::set<std::size_t> value_columns;
    for (std::string line; std::getline(rows, line);) {
      CAPTURE(line);
      const std::size_t gap = line.find("  ");
      REQUIRE(gap != std::string::npos);
      value_columns.insert(line.find_first_not_of(' ', gap));
    }
    CHECK(value_columns.size() == 1);
    CHECK(stats.out.find("remote http     0 hits") != std::string::npos);
  }

  // #57 item 13: entries of one file, arch and flags that differ by their name expressions.
  TEST_CASE("cache ls tells apart entries that differ only by --instantiate") {
    kjit::test::TempDir dir;
    const std::string file = (dir / "tmpl.cu").string();
    std::ofstream(dir / "tmpl.cu") << "template <class T> __global__ void scale(T* x) { x[0] *= T("
                                   << (std::random_device{}() % 1000 + 2) << "); }\n";
    for (const std::string type : {"float", "int"}) {
      REQUIRE(run(dir, "compile --arch sm_90 --instantiate 'scale<" + type + ">' " + file).code == 0);
    }
    const Run text = run(dir, "cache ls");
    REQUIRE(text.code == 0);
    std::vector<std::string> lines;
    std::istringstream in(text.out);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    REQUIRE(lines.size() == 4);  // header, two entries, the count
    const std::size_t options = lines[0].find("OPTIONS");
    CHECK(lines[1].substr(options) != lines[2].substr(options));
    CHECK(text.out.find("--instantiate 'scale<float>'") != std::string::npos);
    CHECK(text.out.find("--instantiate 'scale<int>'") != std::string::npos);
    const auto doc = nlohmann::json::parse(run(dir, "--json cache ls").out);
    REQUIRE(doc.size() == 2);
    std::set<std::string> expressions;
    for (const auto& e : doc) {
      REQUIRE(e["instantiate"].size() == 1);
      expressions.insert(e["instantiate"][0].get<std::string>());
    }
    CHECK(expressions == std::set<std::string>{"scale<float>", "scale<int>"});
  }
}
