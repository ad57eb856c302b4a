// The sharded fleet tier end to end, through real kjit processes and real redis-servers: a fleet
// of 32 processes on 4 shards of which one is killed and one stopped mid-run (no request fails,
// every result is right, only the lost shards' keys are compiled again, and the counters say
// so); a full Redis that still serves its values; `kjit cache remote ping` over shards; a bad
// list; and --require-hit / KJIT_REQUIRE_HIT (exit 1, kind "miss", each tier's reason).
#include "core/cache/remote/rendezvous.hpp"
#include "core/cache/remote/remote_list.hpp"
#include "support/helpers.hpp"
#include "support/redis_server.hpp"
#include "support/temp_dir.hpp"

#include <kjit/kjit.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using Run = kjit::test::CommandResult;

const std::string k_kjit = std::string(KJIT_BINARY_DIR) + "/cli/kjit";
// A remote bound a loaded machine keeps: the default 50 ms can time a live shard out, and three
// timeouts skip it for the back-off (each of its keys then a miss). A dead one still fails at once.
const std::string k_bound = "KJIT_REMOTE_TIMEOUT=2s";

// Tiny kernels: NVRTC is cheap and the fleet's cost is its requests.
std::string kernel_source(int i) {
  return fmt::format("extern \"C\" __global__ void f{}(float* x) {{ x[threadIdx.x] = x[threadIdx.x] * {}.0f + 1.0f; }}\n",
                     i, i + 2);
}

std::vector<std::string> write_kernels(const kjit::test::TempDir& dir, int n) {
  std::vector<std::string> files;
  for (int i = 0; i < n; ++i) {
    auto f = dir / fmt::format("f{}.cu", i);
    kjit::test::write_file(f, kernel_source(i));
    files.push_back(f.string());
  }
  return files;
}

std::string joined(const std::vector<std::string>& files, std::size_t from = 0, std::size_t count = SIZE_MAX) {
  std::string out;
  for (std::size_t i = from; i < files.size() && i - from < count; ++i) out += " " + files[i];
  return out;
}

nlohmann::json parse(const Run& r) {
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  REQUIRE_MESSAGE(!j.is_discarded(), r.out);
  return j;
}

struct Servers {
  std::vector<std::unique_ptr<kjit::test::RedisServer>> all;
  Servers(const kjit::test::TempDir& dir, int n, std::vector<std::string> extra = {}) {
    for (int i = 0; i < n; ++i) all.push_back(std::make_unique<kjit::test::RedisServer>(dir / fmt::format("redis{}", i), extra));
  }
  std::string list() const {
    std::string out;
    for (const auto& s : all) out += (out.empty() ? "" : ",") + s->url();
    return out;
  }
  // Values (not locks) held now.
  std::size_t values(std::size_t i) const {
    return all[i]->keys("kjit:*").size() - all[i]->keys("kjit:lock:*").size();
  }
};

// The shard of each key of `list`, as every kjit process computes it.
std::size_t shard_of(const std::string& list, const std::string& key_hex) {
  auto parsed = kjit::cache::parse_remote_list(list);
  REQUIRE(parsed);
  std::vector<kjit::cache::RendezvousShard> ring;
  for (const auto& s : parsed->shards) ring.push_back({s.name, s.weight});
  auto key = kjit::cache::Key::from_hex(key_hex);
  REQUIRE(key);
  return kjit::cache::rendezvous_shard(*key, ring);
}

// maxmemory 1mb under noeviction, then values until the server refuses one (OOM): full.
void fill(const kjit::test::RedisServer& redis) {
  redis.config_set("maxmemory", "1mb");
  std::string refusal;
  for (int i = 0; refusal.empty() && i < 10000; ++i) refusal = redis.try_set(fmt::format("filler:{}", i), std::string(4096, 'f'));
  REQUIRE_MESSAGE(refusal.rfind("OOM", 0) == 0, refusal);
}

}  // namespace

TEST_SUITE("cli fleet") {
  TEST_CASE("a fleet of 32 processes on 4 shards loses one shard and stops another and recompiles only their keys") {
    constexpr int k_processes = 32, k_kernels = 64;
    kjit::test::TempDir dir;
    Servers shards(dir, 4);
    // Shards 1 and 2 (a fifth of the keys by weight) are lost mid-run: each of their keys costs
    // a compile per node that still needs it, and this machine has two cores.
    const std::string list = fmt::format("{}(4),{}(1),{}(1),{}(4)", shards.all[0]->url(), shards.all[1]->url(),
                                         shards.all[2]->url(), shards.all[3]->url());
    const std::vector<std::string> files = write_kernels(dir, k_kernels);

    // The reference: each kernel compiled by the test itself, no cache.
    std::vector<kjit::CompileResult> reference;
    {
      auto c = kjit::test::quiet_config(dir / "reference");
      c.cache_disabled = true;
      kjit::Runtime rt(c);
      for (int i = 0; i < k_kernels; ++i) {
        reference.push_back(rt.compile(kjit::Program(fmt::format("f{}.cu", i), kernel_source(i)),
                                       kjit::CompileOptions{.arch = kjit::Arch::sm(90)}));
      }
    }
    std::map<std::string, int> file_of_key;
    for (int i = 0; i < k_kernels; ++i) file_of_key[reference[i].key] = i;

    // Each process has its own empty disk; each starts at another kernel, so that keys are
    // compiled, waited for and read at the same time all over the fleet. A generous timeout: 32
    // processes and 4 servers share two cores here (a stopped shard costs a node 3 of them).
    std::vector<FILE*> procs;
    for (int p = 0; p < k_processes; ++p) {
      std::vector<std::string> order(files.begin() + (2 * p) % k_kernels, files.end());
      order.insert(order.end(), files.begin(), files.begin() + (2 * p) % k_kernels);
      const std::string cmd = fmt::format(
          "KJIT_REMOTE_CACHE='{}' KJIT_REMOTE_TIMEOUT=1s {} --cache-dir {} compile --json --arch sm_90 -o {}{} "
          "2>{}",
          list, k_kjit, (dir / fmt::format("node{}", p)).string(), (dir / fmt::format("out{}", p)).string(),
          joined(order), (dir / fmt::format("node{}.err", p)).string());
      procs.push_back(popen(cmd.c_str(), "r"));
      REQUIRE(procs.back() != nullptr);
    }
    // Mid-run, once the nodes wrote 60% of their results (-o): shard 1 dies, shard 2 hangs.
    const std::size_t killed = 1, stopped = 2;
    const auto start = std::chrono::steady_clock::now();
    std::size_t done = 0;
    while (done < k_processes * k_kernels * 6 / 10) {
      REQUIRE_MESSAGE(std::chrono::steady_clock::now() - start < 600s, "the fleet made no progress");
      std::this_thread::sleep_for(50ms);
      done = 0;
      for (int p = 0; p < k_processes; ++p) {
        std::error_code ec;
        for (auto it = std::filesystem::directory_iterator(dir / fmt::format("out{}", p), ec);
             !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
          done += it->path().extension() == ".cubin";
        }
      }
    }
    shards.all[killed]->kill();
    shards.all[stopped]->pause();
    MESSAGE(done, " of ", k_processes * k_kernels, " results were written when the shards were lost");

    std::map<std::string, std::map<std::string, int>> outcomes;  // key -> outcome -> processes
    int failures = 0, errors = 0;
    for (int p = 0; p < k_processes; ++p) {
      const Run r = kjit::test::finish_command(procs[p]);
      failures += r.code != 0;
      const nlohmann::json all = parse(r);
      REQUIRE(all.is_array());
      CHECK(all.size() == k_kernels);
      for (const auto& j : all) {
        if (j.contains("error")) {
          ++errors;
          MESSAGE(j.dump());
          continue;
        }
        outcomes[j["key"].get<std::string>()][j["outcome"].get<std::string>()]++;
      }
      // Every result is right: the bytes the reference compile made.
      for (int i = 0; i < k_kernels; ++i) {
        const auto out = dir / fmt::format("out{}", p) / fmt::format("f{}", i);
        CHECK_MESSAGE(kjit::test::read_file(out.string() + ".ptx") == reference[i].ptx, out);
        CHECK_MESSAGE(kjit::test::read_file(out.string() + ".cubin") == std::string(reference[i].cubin.begin(), reference[i].cubin.end()), out);
      }
    }
    shards.all[stopped]->resume();
    CHECK(failures == 0);
    CHECK(errors == 0);
    REQUIRE(outcomes.size() == k_kernels);  // every key is the reference's

    // Only the lost shards' keys are compiled more than once in the fleet.
    int lost_keys = 0, compiles = 0;
    for (auto& [key, counts] : outcomes) {
      REQUIRE(file_of_key.count(key) == 1);
      const std::size_t shard = shard_of(list, key);
      const bool lost = shard == killed || shard == stopped;
      lost_keys += lost;
      compiles += counts["compiled"];
      CHECK(counts["compiled"] + counts["remote_hit"] + counts["waited"] == k_processes);
      if (lost) {
        CHECK(counts["compiled"] >= 1);
      } else {
        CHECK_MESSAGE(counts["compiled"] == 1, key, " on shard ", shard);  // once in the whole fleet
      }
    }
    MESSAGE(lost_keys, " keys on the lost shards; ", compiles, " compiles");
    CHECK(lost_keys > 0);
    CHECK(compiles <= k_kernels + lost_keys * (k_processes - 1));

    // The counters say so: the nodes' compiles are the ones above, and their reads of the lost
    // shards' keys after 3 failures were misses without a request (remote_shard_down).
    std::uint64_t counted_compiles = 0, shard_down = 0, remote_hits = 0;
    for (int p = 0; p < k_processes; ++p) {
      const Run stats = kjit::test::run_command(fmt::format(
          "{} --cache-dir {} --json cache stats 2>/dev/null", k_kjit, (dir / fmt::format("node{}", p)).string()));
      REQUIRE(stats.code == 0);
      const nlohmann::json s = parse(stats);
      counted_compiles += s["compiles"].get<std::uint64_t>();
      shard_down += s["remote"]["shard_down"].get<std::uint64_t>();
      remote_hits += s["remote"]["hits"].get<std::uint64_t>();
    }
    CHECK(counted_compiles == static_cast<std::uint64_t>(compiles));
    CHECK(shard_down > 0);
    CHECK(remote_hits > 0);

    // What the live shards hold is each on its own shard, and no lock is left behind there.
    for (std::size_t i = 0; i < 4; ++i) {
      if (i == killed) continue;
      for (const std::string& name : shards.all[i]->keys("kjit:*")) {
        if (name.rfind("kjit:lock:", 0) == 0) {
          CHECK_MESSAGE(i == stopped, name);  // a lock taken before the stop expires by itself
          continue;
        }
        CHECK(shard_of(list, name.substr(5)) == i);
      }
    }
  }

  TEST_CASE("a full Redis that refuses writes still serves every value it holds to kjit processes") {
    kjit::test::TempDir dir;
    kjit::test::RedisServer redis(dir / "redis", {"--maxmemory-policy", "noeviction"});
    const std::vector<std::string> files = write_kernels(dir, 60);
    const std::string env = fmt::format("KJIT_REMOTE_CACHE='{}' KJIT_REMOTE_TIMEOUT=1s", redis.url());
    // 40 kernels in the fleet, then the server is full: used memory over maxmemory.
    const Run seed = kjit::test::run_command(fmt::format("{} {} --cache-dir {} compile --json --arch sm_90{} 2>/dev/null",
                                                         env, k_kjit, (dir / "seed").string(), joined(files, 20)));
    REQUIRE(seed.code == 0);
    REQUIRE(redis.dbsize() == 40);
    fill(redis);

    // Two nodes: the 20 new kernels first (compiled; their writes and locks refused), then the 40.
    for (int node = 0; node < 2; ++node) {
      const std::string err = (dir / fmt::format("node{}.err", node)).string();
      const Run r = kjit::test::run_command(fmt::format("{} {} --cache-dir {} compile --json --arch sm_90{} 2>{}", env,
                                                        k_kjit, (dir / fmt::format("node{}", node)).string(),
                                                        joined(files, 0, 20) + joined(files, 20), err));
      CHECK(r.code == 0);
      std::map<std::string, int> counts;
      const nlohmann::json all = parse(r);
      for (std::size_t i = 0; i < all.size(); ++i) counts[all[i].value("outcome", "error") + (i < 20 ? " new" : " seeded")]++;
      CHECK(counts["compiled new"] == 20);
      CHECK(counts["remote_hit seeded"] == 40);  // before: a few refused writes turned the tier off
      const std::string log = kjit::test::read_file(err);
      CHECK_MESSAGE(log.find("still serves reads") != std::string::npos, log);
    }
  }

  TEST_CASE("kjit cache remote ping lists every shard with its state and exits 1 when one is down") {
    kjit::test::TempDir dir;
    Servers shards(dir, 3, {"--maxmemory-policy", "noeviction"});
    shards.all[1]->kill();
    fill(*shards.all[2]);
    const std::string list = shards.all[0]->url() + "," + shards.all[1]->url() + "(2)," + shards.all[2]->url();
    const Run text = kjit::test::run_command(fmt::format("{} --cache-dir {} cache remote ping --remote '{}' 2>&1",
                                                         k_kjit, (dir / "c").string(), list));
    CHECK(text.code == 1);
    CHECK_MESSAGE(text.out.find(shards.all[0]->url() + " (weight 1): redis ") != std::string::npos, text.out);
    CHECK(text.out.find(shards.all[1]->url() + " (weight 2): unreachable") != std::string::npos);
    CHECK(text.out.find(shards.all[2]->url() + " (weight 1): redis ") != std::string::npos);
    CHECK(text.out.find("refusing writes (full: used_memory") != std::string::npos);

    const Run json = kjit::test::run_command(fmt::format("{} --cache-dir {} --json cache remote ping --remote '{}'",
                                                         k_kjit, (dir / "c").string(), list));
    CHECK(json.code == 1);
    const nlohmann::json j = parse(json);
    CHECK(j["ok"] == false);
    CHECK(j["server"].get<std::string>().rfind("redis ", 0) == 0);  // what answered, joined
    CHECK(j["error"]["message"].get<std::string>().find("connecting") != std::string::npos);
    REQUIRE(j["servers"].size() == 3);
    CHECK(j["servers"][0]["kind"] == "shard");
    CHECK(j["servers"][0]["ok"] == true);
    CHECK(j["servers"][0]["refusing_writes"] == false);
    CHECK(j["servers"][1]["ok"] == false);
    CHECK(j["servers"][1]["weight"] == 2);
    CHECK(j["servers"][1]["error"]["message"].get<std::string>().find("connecting") != std::string::npos);
    CHECK(j["servers"][2]["refusing_writes"].get<std::string>().find("noeviction") != std::string::npos);

    shards.all[2]->config_set("maxmemory", "0");
    const Run two = kjit::test::run_command(fmt::format("{} --cache-dir {} --json cache remote ping --remote '{},{}'",
                                                        k_kjit, (dir / "c").string(), shards.all[0]->url(),
                                                        shards.all[2]->url()));
    CHECK(two.code == 0);
    CHECK(parse(two)["ok"] == true);
  }

  TEST_CASE("a bad KJIT_REMOTE_CACHE list is a usage error naming the entry and not its password") {
    kjit::test::TempDir dir;
    for (const std::string bad : {"redis://:s3cret@a,,redis://b", "redis://:s3cret@a(0)", "redis://:s3cret@a,ftp://b"}) {
      const Run r = kjit::test::run_command(fmt::format("KJIT_REMOTE_CACHE='{}' {} --cache-dir {} info 2>&1", bad,
                                                        k_kjit, (dir / "c").string()));
      CHECK_MESSAGE(r.code == 2, bad, ": ", r.out);
      CHECK_MESSAGE(r.out.find("KJIT_REMOTE_CACHE") != std::string::npos, r.out);
      CHECK_MESSAGE(r.out.find("remote cache entry") != std::string::npos, r.out);
      CHECK_MESSAGE(r.out.find("s3cret") == std::string::npos, r.out);
    }
  }

  TEST_CASE("the --require-hit flag and KJIT_REQUIRE_HIT make a miss exit 1 naming each tier and a seeded cache hits") {
    kjit::test::TempDir dir;
    Servers shards(dir, 2);
    const std::string list = shards.list();
    // 16 kernels: the shards' socket paths (temporary folders) decide which shard holds a key, so with
    // 8 all of them landed on one shard about once in 128 runs and the lost shard lost nothing.
    const std::vector<std::string> files = write_kernels(dir, 16);
    const std::string node = "--cache-dir " + (dir / "node").string();

    // Nothing anywhere: exit 1, kind "miss", nothing compiled.
    const Run text = kjit::test::run_command(
        fmt::format("{} {} --require-hit compile --arch sm_90 {} 2>&1", k_kjit, node, files[0]));
    CHECK(text.code == 1);
    for (const char* part : {"f0.cu", "KJIT_REQUIRE_HIT", "disk: absent", "remote: none configured"}) {
      CHECK_MESSAGE(text.out.find(part) != std::string::npos, text.out);
    }
    const Run json = kjit::test::run_command(
        fmt::format("KJIT_REQUIRE_HIT=1 {} {} {} --remote '{}' compile --json --arch sm_90 {} 2>/dev/null", k_bound, k_kjit, node,
                    list, files[0]));
    CHECK(json.code == 1);
    const nlohmann::json e = parse(json).at(0)["error"];
    CHECK(e["kind"] == "miss");
    CHECK(e["key"].get<std::string>().size() == 32);
    REQUIRE(e["tiers"].size() == 2);
    CHECK(e["tiers"][0]["tier"] == "disk");
    CHECK(e["tiers"][1]["tier"] == "remote");
    CHECK(e["tiers"][1]["why"].get<std::string>().rfind("absent from unix://", 0) == 0);
    CHECK(parse(kjit::test::run_command(fmt::format("{} {} --json cache stats", k_kjit, node)))["compiles"] == 0);

    // The fleet seeded (by CI), a fresh node under --require-hit gets every kernel from it.
    REQUIRE(kjit::test::run_command(fmt::format("{} {} --cache-dir {} --remote '{}' compile --arch sm_90{} >/dev/null 2>&1",
                                                k_bound, k_kjit, (dir / "ci").string(), list, joined(files)))
                .code == 0);
    const Run fresh = kjit::test::run_command(fmt::format("{} {} --cache-dir {} --remote '{}' --require-hit compile --json "
                                                          "--arch sm_90{} 2>/dev/null",
                                                          k_bound, k_kjit, (dir / "fresh").string(), list, joined(files)));
    CHECK(fresh.code == 0);
    for (const auto& j : parse(fresh)) CHECK(j["outcome"] == "remote_hit");
    // Its own disk now: hits, with no remote at all.
    const Run disk = kjit::test::run_command(fmt::format("KJIT_REQUIRE_HIT=on {} --cache-dir {} compile --json --arch "
                                                         "sm_90{} 2>/dev/null",
                                                         k_kjit, (dir / "fresh").string(), joined(files)));
    CHECK(disk.code == 0);
    for (const auto& j : parse(disk)) CHECK(j["outcome"] == "hit");

    // A lost shard: its keys are misses that say so, the other shard's are hits; exit 1.
    shards.all[0]->kill();
    const Run lost = kjit::test::run_command(fmt::format("{} {} --cache-dir {} --remote '{}' --require-hit compile --json "
                                                         "--arch sm_90{} 2>/dev/null",
                                                         k_bound, k_kjit, (dir / "other").string(), list, joined(files)));
    CHECK(lost.code == 1);
    int hits = 0, misses = 0;
    for (const auto& j : parse(lost)) {
      if (j.contains("error")) {
        ++misses;
        CHECK(j["error"]["kind"] == "miss");
        const std::string why = j["error"]["tiers"][1]["why"];
        CHECK_MESSAGE((why.rfind("unreachable", 0) == 0 || why.rfind(shards.all[0]->url() + " is down", 0) == 0), why);
      } else {
        ++hits;
        CHECK(j["outcome"] == "remote_hit");
      }
    }
    CHECK(hits > 0);
    CHECK(misses > 0);
    CHECK(hits + misses == static_cast<int>(files.size()));
  }
}
