// kjit warm --shard I/N and kjit cache bundle merge through the real kjit: three shards, each in
// its own cache as on three machines, split a warm (each item compiled once, their union the
// one-host warm's items), write a signed bundle each, and the merge of the three imported on a
// node holds the one-host warm's entries byte for byte; a shard run again compiles only its
// misses, and a kernel added to the manifest is compiled by one shard alone while nothing else
// moves; --shard auto reads Slurm's, Kubernetes' and torchrun's variables and says which; a bad
// spec is a usage error (exit 2) for warm and tune; a merge refuses a truncated or unverifiable
// input and writes nothing, and counts duplicates and conflicts; three shards over one Redis
// compile each item once and a fresh node then finds every item there.
#include "core/cache/store.hpp"
#include "core/tune/decision.hpp"
#include "support/helpers.hpp"
#include "support/redis_server.hpp"
#include "support/temp_dir.hpp"
#include "tests/unit/test_cache_support.hpp"

#include <kjit/kjit.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

using Run = kjit::test::CommandResult;

const std::string k_kjit = std::string(KJIT_BINARY_DIR) + "/cli/kjit";
const std::string k_fixture = std::string(KJIT_SOURCE_DIR) + "/tests/data/warm_fixture";
const std::string k_archs = "--arch sm_80,sm_90";
// No job system's variables from the machine running the tests: each case sets its own.
const std::string k_clean_env = "env -u SLURM_ARRAY_TASK_ID -u SLURM_ARRAY_TASK_COUNT -u SLURM_ARRAY_TASK_MIN "
                                "-u SLURM_ARRAY_TASK_STEP -u JOB_COMPLETION_INDEX -u RANK -u WORLD_SIZE "
                                "-u KJIT_REMOTE_CACHE -u KJIT_REMOTE_SIGNING_KEY_FILE -u KJIT_REMOTE_PUBLIC_KEY_FILE "
                                "-u KJIT_REMOTE_SECRET_FILE -u KJIT_REQUIRE_HIT";

struct Result {
  int code = -1;
  std::string out, err;
};

// `ENV kjit ARGS` with stderr kept apart.
Result kjit_run(const kjit::test::TempDir& dir, const std::string& args, const std::string& env = {}) {
  static int n = 0;
  const fs::path err = dir / fmt::format("stderr{}.txt", n++);
  auto r = kjit::test::run_command(fmt::format("{} {} {} {} 2>{}", k_clean_env, env, k_kjit, args, err.string()));
  return {r.code, r.out, kjit::test::read_file(err)};
}

nlohmann::json json_of(const Result& r) {
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  REQUIRE_MESSAGE(!j.is_discarded(), r.out << r.err);
  return j;
}

// A manifest of `n` variants of a small kernel (and `extra` more), beside the fixture's kernels.
fs::path write_many(const kjit::test::TempDir& dir, int n) {
  const fs::path many = dir / "many";
  kjit::test::write_file(many / "axpb.cu",
                         "template <class T>\n__global__ void axpb(T* x, T a, int n) {\n"
                         "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                         "  if (i < n) x[i] = a * x[i] + T(B);\n}\n");
  std::string variants;
  for (int i = 0; i < n; ++i) {
    variants += fmt::format("{}{{\"name\": \"b{}\", \"defines\": [\"B={}\"]}}", i ? ", " : "", i, i + 1);
  }
  kjit::test::write_file(many / "kjit.json",
                         fmt::format(R"({{"kjit_manifest": 1, "kernels": [{{"file": "axpb.cu",
                            "instantiate": ["axpb<float>", "axpb<double>"], "variants": [{}]}}]}})",
                                     variants));
  return many;
}

std::set<std::string> keys_of(const nlohmann::json& warm) {
  std::set<std::string> out;
  for (const auto& i : warm["items"]) {
    if (!i["key"].get<std::string>().empty()) out.insert(i["key"].get<std::string>());
  }
  return out;
}

// Every entry file of a cache folder (<2 hex>/<30 hex>.kjit) with its bytes.
std::map<std::string, std::string> entries_of(const fs::path& cache) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(cache)) {
    if (e.is_regular_file() && e.path().extension() == ".kjit") {
      out[fs::relative(e.path(), cache).string()] = kjit::test::read_file(e.path());
    }
  }
  return out;
}

fs::path entry_path(const fs::path& cache, const std::string& key) {
  return cache / key.substr(0, 2) / (key.substr(2) + ".kjit");
}

}  // namespace

TEST_SUITE("cli shard") {
  TEST_CASE("three shards split a warm and their merged bundle holds the one-host warm's entries byte for byte") {
    kjit::test::TempDir dir;
    const fs::path many = write_many(dir, 8);
    const std::string sources = k_fixture + " " + many.string();

    // One host: every item.
    Result one = kjit_run(dir, fmt::format("--cache-dir {} --json warm {} {} -j 2", (dir / "one").string(), sources, k_archs));
    REQUIRE_MESSAGE(one.code == 0, one.err);
    const auto one_json = json_of(one);
    const std::set<std::string> all = keys_of(one_json);
    const std::size_t items = one_json["items"].size();
    CHECK(items == 26);  // (5 fixture variants + 8) x 2 archs
    CHECK(all.size() == items);
    CHECK(one_json["shard"]["count"] == 1);

    REQUIRE(kjit_run(dir, "cache keygen --out " + (dir / "ci").string()).code == 0);
    const std::string signing = "KJIT_REMOTE_SIGNING_KEY_FILE=" + (dir / "ci.key").string();
    const std::string public_key = "KJIT_REMOTE_PUBLIC_KEY_FILE=" + (dir / "ci.pub").string();

    // Three shards, each in a cache of its own (three machines), each writing its bundle.
    std::set<std::string> seen;
    std::size_t compiled = 0;
    std::string bundles;
    for (int i = 0; i < 3; ++i) {
      const std::string bundle = (dir / fmt::format("shard{}.kjb", i)).string();
      Result s = kjit_run(dir,
                          fmt::format("--cache-dir {} --json warm {} {} -j 2 --shard {}/3 --bundle {}",
                                      (dir / fmt::format("s{}", i)).string(), sources, k_archs, i, bundle),
                          signing);
      REQUIRE_MESSAGE(s.code == 0, s.err);
      CHECK(s.err.find(fmt::format("shard {}/3 (--shard {}/3)", i, i)) != std::string::npos);
      const auto j = json_of(s);
      const std::set<std::string> mine = keys_of(j);
      CHECK(mine.size() == j["items"].size());
      CHECK(!mine.empty());  // 26 items: a shard with none would be a broken split
      CHECK(j["compiled"] == mine.size());
      CHECK(j["shard"]["index"] == i);
      CHECK(j["shard"]["elsewhere"] == items - mine.size());
      CHECK(j["bundle"]["entries"] == mine.size());
      CHECK(j["bundle"]["signature"] == "ed25519");
      CHECK(j["bundle"]["missing"].empty());
      for (const auto& k : mine) {
        CHECK(all.count(k) == 1);
        CHECK(seen.insert(k).second);  // in no other shard
      }
      compiled += j["compiled"].get<std::size_t>();
      bundles += " " + bundle;
    }
    CHECK(seen == all);
    CHECK(compiled == items);  // each item compiled once

    // The merge, signed; the node imports it with the public key alone.
    const fs::path merged = dir / "all.kjb";
    Result m = kjit_run(dir, fmt::format("--json cache bundle merge{} -o {}", bundles, merged.string()), signing);
    REQUIRE_MESSAGE(m.code == 0, m.err);
    const auto mj = json_of(m);
    CHECK(mj["bundle"]["entries"] == items);
    CHECK(mj["bundle"]["signature"] == "ed25519");
    CHECK(mj["inputs"].size() == 3);
    CHECK(mj["duplicates"] == 0);
    CHECK(mj["conflicts"].empty());
    CHECK(mj["file_size"] == fs::file_size(merged));
    Result imported = kjit_run(dir, fmt::format("--cache-dir {} --json cache import {}", (dir / "node").string(),
                                                merged.string()),
                               public_key);
    REQUIRE_MESSAGE(imported.code == 0, imported.err);
    CHECK(json_of(imported)["written"] == items);

    // Byte for byte the one-host warm's entries, and the node compiles nothing.
    const auto one_entries = entries_of(dir / "one"), node_entries = entries_of(dir / "node");
    CHECK(one_entries.size() == items);
    CHECK(node_entries == one_entries);
    Result node = kjit_run(dir, fmt::format("--cache-dir {} --json warm {} {}", (dir / "node").string(), sources, k_archs),
                           "KJIT_REQUIRE_HIT=1");
    REQUIRE_MESSAGE(node.code == 0, node.err);
    CHECK(json_of(node)["cached"] == items);
    CHECK(json_of(node)["compiled"] == 0);
  }

  TEST_CASE("a shard run again compiles only its misses and a kernel added moves nothing else") {
    kjit::test::TempDir dir;
    const fs::path many = write_many(dir, 8);
    const std::string sources = k_fixture + " " + many.string();
    auto shard = [&](int i) {
      return json_of(kjit_run(dir, fmt::format("--cache-dir {} --json warm {} {} -j 2 --shard {}/3",
                                               (dir / fmt::format("s{}", i)).string(), sources, k_archs, i)));
    };
    std::vector<std::set<std::string>> first;
    for (int i = 0; i < 3; ++i) first.push_back(keys_of(shard(i)));

    // Two entries of shard 1 lost: the rerun compiles those two, nothing else.
    REQUIRE(first[1].size() >= 2);
    auto it = first[1].begin();
    const std::string lost_a = *it++, lost_b = *it;
    REQUIRE(fs::remove(entry_path(dir / "s1", lost_a)));
    REQUIRE(fs::remove(entry_path(dir / "s1", lost_b)));
    const auto again = shard(1);
    CHECK(again["compiled"] == 2);
    CHECK(again["cached"] == first[1].size() - 2);
    for (const auto& item : again["items"]) {
      const std::string key = item["key"];
      CHECK((item["status"] == "compiled") == (key == lost_a || key == lost_b));
    }

    // One more variant: each shard keeps its items; the two new ones (two archs) go to shards
    // whose caches miss them, and nothing moves between shards (a moved item would compile).
    write_many(dir, 9);
    std::size_t compiled = 0, total = 0;
    std::set<std::string> added;
    for (int i = 0; i < 3; ++i) {
      const auto j = shard(i);
      compiled += j["compiled"].get<std::size_t>();
      total += j["items"].size();
      for (const auto& k : keys_of(j)) {
        if (first[i].count(k) == 0) added.insert(k);
      }
      for (const auto& k : first[i]) CHECK(keys_of(j).count(k) == 1);
    }
    CHECK(total == 28);
    CHECK(compiled == 2);
    CHECK(added.size() == 2);
  }

  TEST_CASE("shard auto reads Slurm Kubernetes and torchrun variables and says which and a bad spec exits 2") {
    kjit::test::TempDir dir;
    const fs::path many = write_many(dir, 6);
    auto warm = [&](const std::string& spec, const std::string& env) {
      return kjit_run(dir, fmt::format("--cache-dir {} --json warm {} --arch sm_90 --shard {}", (dir / "c").string(),
                                       many.string(), spec),
                      env);
    };
    const auto explicit_one = json_of(warm("1/3", ""));
    const std::set<std::string> one = keys_of(explicit_one);
    struct Case {
      std::string spec, env, said;
    };
    for (const Case& c : {Case{"auto", "SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=3",
                               "shard 1/3 (SLURM_ARRAY_TASK_ID=1, SLURM_ARRAY_TASK_COUNT=3)"},
                          Case{"auto", "SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_COUNT=3 SLURM_ARRAY_TASK_MIN=1",
                               "shard 1/3 (SLURM_ARRAY_TASK_ID=2, SLURM_ARRAY_TASK_COUNT=3, SLURM_ARRAY_TASK_MIN=1)"},
                          Case{"auto/3", "JOB_COMPLETION_INDEX=1", "shard 1/3 (JOB_COMPLETION_INDEX=1 of --shard auto/3)"},
                          Case{"auto", "RANK=1 WORLD_SIZE=3", "shard 1/3 (RANK=1, WORLD_SIZE=3)"}}) {
      CAPTURE(c.env);
      Result r = warm(c.spec, c.env);
      REQUIRE_MESSAGE(r.code == 0, r.err);
      CHECK(r.err.find(c.said) != std::string::npos);
      const auto j = json_of(r);
      CHECK(j["shard"]["index"] == 1);
      CHECK(j["shard"]["count"] == 3);
      CHECK(c.said.find(j["shard"]["from"].get<std::string>()) != std::string::npos);
      CHECK(keys_of(j) == one);
    }

    // Bad specs: usage, exit 2, one JSON error document; tune refuses them before looking for a GPU.
    for (const std::string bad : {"3/3", "x", "1/0", "-1/3", "auto"}) {
      CAPTURE(bad);
      Result r = warm(bad, "");
      CHECK(r.code == 2);
      CHECK(json_of(r)["error"]["kind"] == "usage");
      CHECK(json_of(r)["error"]["message"].get<std::string>().find("--shard") != std::string::npos);
      Result t = kjit_run(dir, fmt::format("--json tune {} --shard {}", many.string(), bad));
      CHECK(t.code == 2);
      CHECK(json_of(t)["error"]["kind"] == "usage");
    }
    Result noted = warm("auto", "JOB_COMPLETION_INDEX=1");
    CHECK(noted.code == 2);
    CHECK(json_of(noted)["error"]["message"].get<std::string>().find("auto/N") != std::string::npos);
  }

  TEST_CASE("a merge refuses a truncated or unverifiable input and writes nothing and counts duplicates and conflicts") {
    kjit::test::TempDir dir;
    // Two caches with one compile result each and a tuning decision under one key that differs.
    for (int c = 0; c < 2; ++c) {
      const fs::path cache = dir / fmt::format("c{}", c);
      {
        kjit::Runtime rt(kjit::test::quiet_config(cache));
        rt.compile(kjit::Program(fmt::format("k{}.cu", c), fmt::format("__global__ void k{}(float* x) {{ x[0] = {}; }}\n", c, c)),
                   {.arch = kjit::Arch::sm(90)});
      }
      kjit::cache::Store store(kjit::cache::StoreConfig{cache.string()});
      kjit::tune::Decision d;
      d.chosen = static_cast<std::size_t>(c);
      d.labels = {"block 128", "block 256"};
      d.median_us = {3.5 + c, 2.25};
      d.why_not = {"", ""};
      d.device = "NVIDIA H100";
      d.name = "k.cu: k";
      d.tuning_key = "n=1048576";
      const kjit::cache::Key key = kjit::test::test_key(77);
      REQUIRE(store.put_bytes(key, kjit::tune::encode_decision(key, d)).stored);
      REQUIRE(kjit_run(dir, fmt::format("--cache-dir {} cache export {}", cache.string(),
                                        (dir / fmt::format("b{}.kjb", c)).string()))
                  .code == 0);
    }
    const std::string b0 = (dir / "b0.kjb").string(), b1 = (dir / "b1.kjb").string();
    const fs::path out = dir / "all.kjb";

    // b0 twice and b1: 3 keys; b0's second copy is duplicates, the decision a conflict (b0's kept).
    Result m = kjit_run(dir, fmt::format("--json cache bundle merge {} {} {} -o {}", b0, b0, b1, out.string()));
    REQUIRE_MESSAGE(m.code == 0, m.err);
    auto j = json_of(m);
    CHECK(j["bundle"]["entries"] == 3);
    CHECK(j["bundle"]["signature"] == "none");
    CHECK(j["duplicates"] == 2);
    REQUIRE(j["conflicts"].size() == 1);
    CHECK(j["conflicts"][0] == kjit::test::test_key(77).hex());
    CHECK(m.err.find("different bytes") != std::string::npos);
    Result imported = kjit_run(dir, fmt::format("--cache-dir {} --json cache import {}", (dir / "node").string(), out.string()));
    REQUIRE_MESSAGE(imported.code == 0, imported.err);
    const auto decisions = kjit::Cache(dir / "node").tuning_decisions();
    REQUIRE(decisions.size() == 1);
    CHECK(decisions[0].chosen == 0);  // the first input's
    fs::remove(out);

    // A truncated input: refused, named, nothing written.
    const fs::path cut = dir / "cut.kjb";
    const std::string whole = kjit::test::read_file(b1);
    kjit::test::write_file(cut, whole.substr(0, whole.size() - 100));
    Result refused = kjit_run(dir, fmt::format("--json cache bundle merge {} {} -o {}", b0, cut.string(), out.string()));
    CHECK(refused.code == 1);
    const std::string message = json_of(refused)["error"]["message"];
    CHECK(message.find(cut.string()) != std::string::npos);
    CHECK(message.find("nothing was merged") != std::string::npos);
    CHECK(!fs::exists(out));

    // A signed input without the key that checks it, and an unsigned one where a key is set.
    REQUIRE(kjit_run(dir, "cache keygen --out " + (dir / "ci").string()).code == 0);
    const std::string signing = "KJIT_REMOTE_SIGNING_KEY_FILE=" + (dir / "ci.key").string();
    const fs::path signed_bundle = dir / "signed.kjb";
    REQUIRE(kjit_run(dir, fmt::format("--cache-dir {} cache export {}", (dir / "c0").string(), signed_bundle.string()),
                     signing)
                .code == 0);
    Result unchecked = kjit_run(dir, fmt::format("cache bundle merge {} -o {}", signed_bundle.string(), out.string()));
    CHECK(unchecked.code == 1);
    CHECK(unchecked.err.find("no key is configured") != std::string::npos);
    Result unsigned_in = kjit_run(dir, fmt::format("cache bundle merge {} {} -o {}", signed_bundle.string(), b1,
                                                   out.string()),
                                  signing);
    CHECK(unsigned_in.code == 1);
    CHECK(unsigned_in.err.find(b1) != std::string::npos);
    CHECK(!fs::exists(out));
    // Usage: no input, no -o.
    CHECK(kjit_run(dir, "cache bundle merge -o " + out.string()).code == 2);
    CHECK(kjit_run(dir, "cache bundle merge " + b0).code == 2);
  }

  TEST_CASE("three shards over one Redis compile each item once and a fresh node finds every item there") {
    kjit::test::TempDir dir;
    kjit::test::RedisServer redis(dir / "redis");
    const fs::path many = write_many(dir, 8);
    const std::string sources = k_fixture + " " + many.string();
    const std::string remote = "KJIT_REMOTE_TIMEOUT=2s KJIT_REMOTE_CACHE=" + redis.url();

    // The three at once, as three machines would run.
    std::vector<FILE*> running;
    for (int i = 0; i < 3; ++i) {
      const std::string command =
          fmt::format("{} {} {} --cache-dir {} --json warm {} {} -j 1 --shard {}/3 2>/dev/null", k_clean_env, remote,
                      k_kjit, (dir / fmt::format("s{}", i)).string(), sources, k_archs, i);
      running.push_back(popen(command.c_str(), "r"));
      REQUIRE(running.back() != nullptr);
    }
    std::size_t compiled = 0, items = 0;
    for (FILE* p : running) {
      const Run r = kjit::test::finish_command(p);
      REQUIRE_MESSAGE(r.code == 0, r.out);
      const auto j = nlohmann::json::parse(r.out);
      compiled += j["compiled"].get<std::size_t>();
      items += j["items"].size();
      CHECK(j["failed"] == 0);
    }
    CHECK(items == 26);
    CHECK(compiled == 26);
    // Every value in Redis (the workers' writes finished when each process exited), none dropped.
    CHECK(redis.keys("kjit:*").size() - redis.keys("kjit:lock:*").size() == 26);
    for (int i = 0; i < 3; ++i) {
      const auto stats = json_of(kjit_run(dir, fmt::format("--cache-dir {} --json cache stats", (dir / fmt::format("s{}", i)).string())));
      CHECK(stats["remote"]["dropped"] == 0);
    }

    // A fresh node, its disk empty: every item a remote hit, nothing compiled, under --require-hit.
    Result node = kjit_run(dir, fmt::format("--cache-dir {} --json --require-hit warm {} {}", (dir / "node").string(),
                                            sources, k_archs),
                           remote);
    REQUIRE_MESSAGE(node.code == 0, node.err);
    CHECK(json_of(node)["cached"] == 26);
    CHECK(json_of(node)["compiled"] == 0);
  }
}
