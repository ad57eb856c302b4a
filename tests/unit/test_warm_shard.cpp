// kjit::Shard: what --shard takes (I/N, auto, auto/N) and refuses, the job systems' variables
// (Slurm arrays with their min and step, Kubernetes indexed Jobs, torchrun's RANK/WORLD_SIZE),
// which wins when several are set and what each says it used; and the split itself over random
// keys: every key in exactly one shard, the remote tier's rendezvous function over "0".."N-1",
// shares near 1/N, and N+1 shards moving only the keys the new shard takes.
#include <kjit/error.hpp>
#include <kjit/tools/shard.hpp>

#include "core/cache/key.hpp"
#include "core/cache/remote/rendezvous.hpp"

#include <doctest/doctest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

using kjit::Shard;

namespace {

std::vector<std::string> random_keys(std::size_t n) {
  const std::uint64_t seed = std::random_device{}();
  MESSAGE("seed ", seed);
  std::mt19937_64 rng(seed);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n; ++i) {
    kjit::cache::Key k;
    for (auto& b : k.bytes) b = static_cast<std::uint8_t>(rng());
    out.push_back(k.hex());
  }
  return out;
}

// An environment of exactly these variables.
Shard::Environment env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string usage_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const kjit::UsageError& e) {
    return e.what();
  }
  FAIL("no UsageError");
  return {};
}

}  // namespace

TEST_SUITE("Shard") {
  TEST_CASE("I/N names shard I of N counted from 0 and anything else is a usage error naming the spec") {
    const Shard s = Shard::parse("2/8");
    CHECK(s.index() == 2);
    CHECK(s.count() == 8);
    CHECK(s.str() == "2/8");
    CHECK(s.source() == "--shard 2/8");
    CHECK(Shard::parse("0/1").whole());
    CHECK(Shard().whole());
    CHECK(Shard::parse("9999/10000").index() == 9999);
    for (const char* bad : {"", "8", "/", "2/", "/8", "a/b", "-1/4", "1/-4", "+1/4", " 1/4", "1/4 ", "1/4/", "1.0/4",
                            "0x1/4", "1 / 4", "auto/", "auto/x", "Auto", "1/10001", "1234567890/4"}) {
      CAPTURE(bad);
      const std::string m = usage_message([&] { Shard::parse(bad); });
      CHECK(m.find(bad) != std::string::npos);
      CHECK(m.find("--shard") != std::string::npos);
    }
    // Out of range: the message says shards count from 0 and which exist.
    const std::string four = usage_message([] { Shard::parse("4/4"); });
    CHECK(four.find("count from 0 (0/4 to 3/4)") != std::string::npos);
    CHECK(usage_message([] { Shard::parse("0/0"); }).find("at least one shard") != std::string::npos);
    CHECK(usage_message([] { Shard(3, 3); }).find("does not exist") != std::string::npos);
  }

  TEST_CASE("auto reads a Slurm array with its min and step and says which variables it used") {
    Shard s = Shard::parse("auto", env({{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "8"}}));
    CHECK(s == Shard(3, 8));
    CHECK(s.source() == "SLURM_ARRAY_TASK_ID=3, SLURM_ARRAY_TASK_COUNT=8");
    // --array=1-8: ids 1..8 are shards 0..7.
    s = Shard::parse("auto", env({{"SLURM_ARRAY_TASK_ID", "8"}, {"SLURM_ARRAY_TASK_COUNT", "8"},
                                  {"SLURM_ARRAY_TASK_MIN", "1"}, {"SLURM_ARRAY_TASK_MAX", "8"}}));
    CHECK(s == Shard(7, 8));
    CHECK(s.source().find("SLURM_ARRAY_TASK_MIN=1") != std::string::npos);
    // --array=0-14:2: ids 0, 2, ..., 14 are shards 0..7.
    s = Shard::parse("auto", env({{"SLURM_ARRAY_TASK_ID", "6"}, {"SLURM_ARRAY_TASK_COUNT", "8"},
                                  {"SLURM_ARRAY_TASK_MIN", "0"}, {"SLURM_ARRAY_TASK_STEP", "2"}}));
    CHECK(s == Shard(3, 8));
    // The count given with auto/N must agree.
    CHECK(Shard::parse("auto/8", env({{"SLURM_ARRAY_TASK_ID", "1"}, {"SLURM_ARRAY_TASK_COUNT", "8"}})) == Shard(1, 8));
    CHECK(usage_message([] {
            Shard::parse("auto/4", env({{"SLURM_ARRAY_TASK_ID", "1"}, {"SLURM_ARRAY_TASK_COUNT", "8"}}));
          }).find("says there are 8 shards") != std::string::npos);
    // A task off the range, an id without a count, and a value that is no number.
    CHECK(usage_message([] {
            Shard::parse("auto", env({{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "8"},
                                      {"SLURM_ARRAY_TASK_STEP", "2"}}));
          }).find("not on the array's range") != std::string::npos);
    CHECK(usage_message([] { Shard::parse("auto", env({{"SLURM_ARRAY_TASK_ID", "3"}})); })
              .find("SLURM_ARRAY_TASK_COUNT is not") != std::string::npos);
    CHECK(usage_message([] {
            Shard::parse("auto", env({{"SLURM_ARRAY_TASK_ID", "x"}, {"SLURM_ARRAY_TASK_COUNT", "8"}}));
          }).find("SLURM_ARRAY_TASK_ID=\"x\"") != std::string::npos);
    CHECK(usage_message([] {
            Shard::parse("auto", env({{"SLURM_ARRAY_TASK_ID", "8"}, {"SLURM_ARRAY_TASK_COUNT", "8"}}));
          }).find("does not exist") != std::string::npos);
  }

  TEST_CASE("auto reads a Kubernetes index with auto/N and torchrun's RANK and WORLD_SIZE and Slurm wins over both") {
    Shard s = Shard::parse("auto/4", env({{"JOB_COMPLETION_INDEX", "2"}}));
    CHECK(s == Shard(2, 4));
    CHECK(s.source() == "JOB_COMPLETION_INDEX=2 of --shard auto/4");
    CHECK(usage_message([] { Shard::parse("auto", env({{"JOB_COMPLETION_INDEX", "2"}})); }).find("--shard auto/N") !=
          std::string::npos);
    s = Shard::parse("auto", env({{"RANK", "1"}, {"WORLD_SIZE", "2"}}));
    CHECK(s == Shard(1, 2));
    CHECK(s.source() == "RANK=1, WORLD_SIZE=2");
    CHECK(Shard::parse("auto/3", env({{"RANK", "2"}})) == Shard(2, 3));
    CHECK(usage_message([] { Shard::parse("auto", env({{"RANK", "1"}})); }).find("WORLD_SIZE is not") !=
          std::string::npos);
    // Several set: a Slurm array first, then the Kubernetes index, then RANK.
    s = Shard::parse("auto/6", env({{"RANK", "1"}, {"WORLD_SIZE", "6"}, {"JOB_COMPLETION_INDEX", "4"}}));
    CHECK(s == Shard(4, 6));
    s = Shard::parse("auto", env({{"RANK", "1"}, {"WORLD_SIZE", "6"}, {"SLURM_ARRAY_TASK_ID", "5"},
                                  {"SLURM_ARRAY_TASK_COUNT", "6"}}));
    CHECK(s == Shard(5, 6));
    CHECK(s.source().starts_with("SLURM_ARRAY_TASK_ID=5"));
    // Nothing set: says what it looked for.
    const std::string none = usage_message([] { Shard::parse("auto", env({})); });
    for (const char* v : {"SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX", "RANK", "--shard I/N"}) {
      CHECK(none.find(v) != std::string::npos);
    }
  }

  TEST_CASE("every key goes to exactly one shard by the remote tier's rendezvous function and shares are near 1/N") {
    const std::vector<std::string> keys = random_keys(12000);
    for (unsigned n : {1u, 2u, 3u, 7u, 16u}) {
      CAPTURE(n);
      std::vector<kjit::cache::RendezvousShard> ring;
      std::vector<std::string> names;
      for (unsigned i = 0; i < n; ++i) names.push_back(std::to_string(i));
      for (const auto& name : names) ring.push_back({name, 1.0});
      std::vector<std::size_t> share(n, 0);
      std::vector<Shard> shards;
      for (unsigned i = 0; i < n; ++i) shards.emplace_back(i, n);
      for (const auto& key : keys) {
        unsigned owners = 0;
        for (const Shard& s : shards) owners += s.owns(key) ? 1 : 0;
        REQUIRE(owners == 1);
        const unsigned at = shards[0].shard_of(key);
        CHECK(at == kjit::cache::rendezvous_shard(*kjit::cache::Key::from_hex(key), ring));
        share[at] += 1;
      }
      // 12000 keys: a share off by half of 1/N is over 10 standard deviations away at N = 16.
      for (std::size_t c : share) {
        CHECK(c > keys.size() / n / 2);
        CHECK(c < keys.size() * 3 / n / 2);
      }
    }
    CHECK(usage_message([] { Shard(0, 2).shard_of("not a key"); }).find("32 hex digits") != std::string::npos);
  }

  TEST_CASE("going from N to N+1 shards moves only the keys the new shard takes") {
    const std::vector<std::string> keys = random_keys(8000);
    for (unsigned n : {1u, 4u, 9u}) {
      const Shard before(0, n), after(0, n + 1);
      std::size_t moved = 0;
      for (const auto& key : keys) {
        const unsigned a = before.shard_of(key), b = after.shard_of(key);
        if (a != b) {
          CHECK(b == n);
          ++moved;
        }
      }
      // About 1/(N+1) of the keys move.
      CHECK(moved > keys.size() / (n + 1) / 2);
      CHECK(moved < keys.size() * 3 / (n + 1) / 2);
    }
  }
}
