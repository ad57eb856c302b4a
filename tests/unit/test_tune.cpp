// The tuner's parts that need no GPU: decision keys (every field counts; another device's or
// candidate list's decision is never found), decision entries (round trip; damaged, truncated,
// foreign-key and non-decision bytes refused), the choice (ties to the earliest), successive
// halving on made-up timings, buckets, KJIT_TUNE, and decisions stored through a Runtime's
// cache and found by a fresh one.
#include <kjit/error.hpp>
#include <kjit/tune.hpp>

#include "core/runtime_access.hpp"
#include "core/tune/decision.hpp"
#include "core/tune/report.hpp"
#include "support/helpers.hpp"
#include "support/launch_probes.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <set>

namespace {

kjit::tune::DecisionKeyFields fields() {
  kjit::tune::DecisionKeyFields f;
  f.source_key = "0123456789abcdef0123456789abcdef";
  f.candidates = {"square<1> block (128,1,1) smem 0", "square<4> block (256,1,1) smem 0"};
  f.device_name = "NVIDIA H100 80GB HBM3";
  f.compute_capability = 90;
  f.driver_version = 13000;
  f.kjit_version = "0.1.0";
  f.tuning_key = "n<=1048576";
  return f;
}

kjit::tune::Decision decision() {
  kjit::tune::Decision d;
  d.chosen = 1;
  d.labels = {"a", "b", "c"};
  d.median_us = {12.5, 10.25, -1};
  d.why_not = {"", "", "does not compile: too many resources"};
  d.noise = 0.03;
  d.tuning_key = "n<=1048576";
  d.device = "NVIDIA H100 80GB HBM3";
  return d;
}

}  // namespace

TEST_SUITE("tune") {
  TEST_CASE("a decision key changes with every field it depends on") {
    using kjit::tune::decision_key;
    const auto base = decision_key(fields());
    CHECK(decision_key(fields()) == base);
    std::set<std::string> keys{base.hex()};
    auto vary = [&](auto change) {
      auto f = fields();
      change(f);
      keys.insert(decision_key(f).hex());
    };
    vary([](auto& f) { f.source_key[0] = 'f'; });
    vary([](auto& f) { f.candidates.push_back("square<8> block (512,1,1) smem 0"); });
    vary([](auto& f) { std::swap(f.candidates[0], f.candidates[1]); });
    vary([](auto& f) { f.candidates[1] += " -DTILE=2"; });
    vary([](auto& f) { f.device_name = "NVIDIA H200"; });
    vary([](auto& f) { f.compute_capability = 100; });
    vary([](auto& f) { f.driver_version = 13010; });
    vary([](auto& f) { f.kjit_version = "0.2.0"; });
    vary([](auto& f) { f.tuning_key = "n<=2097152"; });
    CHECK(keys.size() == 10);
  }

  TEST_CASE("a decision entry round-trips and damaged or foreign bytes are refused") {
    const auto key = kjit::tune::decision_key(fields());
    const std::string bytes = kjit::tune::encode_decision(key, decision());
    std::string why;
    auto back = kjit::tune::decode_decision(key, bytes, &why);
    REQUIRE_MESSAGE(back.has_value(), why);
    CHECK(back->chosen == 1);
    CHECK(back->labels == decision().labels);
    CHECK(back->median_us == decision().median_us);
    CHECK(back->why_not == decision().why_not);
    CHECK(back->tuning_key == "n<=1048576");

    std::mt19937 gen(5);
    for (int i = 0; i < 50; ++i) {
      std::string damaged = bytes;
      damaged[gen() % damaged.size()] ^= static_cast<char>(1 + gen() % 255);
      CHECK_FALSE(kjit::tune::decode_decision(key, damaged).has_value());
    }
    CHECK_FALSE(kjit::tune::decode_decision(key, bytes.substr(0, bytes.size() - 1)).has_value());
    CHECK_FALSE(kjit::tune::decode_decision(key, "").has_value());
    auto other = fields();
    other.device_name = "NVIDIA H200";
    CHECK_FALSE(kjit::tune::decode_decision(kjit::tune::decision_key(other), bytes, &why).has_value());
    CHECK(why == "recorded under another key");
    kjit::cache::Entry compile_entry;
    compile_entry.set(kjit::cache::SectionKind::ptx, ".version 8.0");
    CHECK_FALSE(kjit::tune::decode_decision(key, kjit::cache::serialize(key, compile_entry), &why).has_value());
    CHECK(why == "no tuning section");
    auto bad = decision();
    bad.chosen = 7;
    CHECK_FALSE(kjit::tune::decode_decision(key, kjit::tune::encode_decision(key, bad)).has_value());
  }

  TEST_CASE("the choice is the fastest and a tie within the noise goes to the earlier candidate") {
    using kjit::tune::choose;
    CHECK(choose({10.0, 8.0, 9.0}, 0.0) == 1u);
    CHECK(choose({8.2, 8.0, 9.0}, 0.03) == 0u);   // 8.2 is within 3% of 8.0
    CHECK(choose({8.3, 8.0, 9.0}, 0.03) == 1u);   // 8.3 is not
    CHECK(choose({std::nullopt, 8.0, 8.1}, 0.03) == 1u);
    CHECK(choose({std::nullopt, std::nullopt}, 0.03) == std::nullopt);
    CHECK(choose({}, 0.03) == std::nullopt);
    // Two runs with timings that differ within the noise pick the same one.
    std::mt19937 gen(9);
    for (int i = 0; i < 100; ++i) {
      auto jitter = [&] { return 1.0 + (static_cast<double>(gen() % 1000) / 1000.0 - 0.5) * 0.02; };
      CHECK(choose({10.0 * jitter(), 10.0 * jitter(), 20.0 * jitter()}, 0.03) == 0u);
    }
  }

  TEST_CASE("successive halving drops clearly slower candidates and keeps failures out") {
    const std::vector<double> speed{5.0, 30.0, 5.1, 7.0, 100.0};
    std::vector<int> calls(6, 0);
    auto time = [&](std::size_t i, int, std::string* why) -> std::optional<double> {
      ++calls[i];
      if (i == 5) {
        *why = "does not launch: too many resources requested";
        return std::nullopt;
      }
      return speed[i];
    };
    const auto r = kjit::tune::successive_halving(6, time, {.rounds = 3, .drop_above = 1.3});
    CHECK(calls[0] == 3);
    CHECK(calls[2] == 3);
    CHECK(calls[1] == 1);  // 6x the best: out after the first round
    CHECK(calls[4] == 1);
    CHECK(calls[3] == 1);  // 1.4x
    CHECK(calls[5] == 1);
    CHECK(r.finalists == std::vector<bool>{true, false, true, false, false, false});
    CHECK(r.why_not[1].find("dropped after round 1") != std::string::npos);
    CHECK(r.why_not[5] == "does not launch: too many resources requested");
    CHECK(r.times[1] == 30.0);  // a dropped candidate keeps its time for the record
    std::vector<std::optional<double>> finalists(6);
    for (std::size_t i = 0; i < 6; ++i) {
      if (r.finalists[i]) finalists[i] = r.times[i];
    }
    CHECK(kjit::tune::choose(finalists, 0.03) == 0u);  // 5.0 and 5.1 tie: the earlier
  }

  TEST_CASE("tuning keys bucket to the next power of two and candidates have a canonical text") {
    CHECK(kjit::tune::next_power_of_two(1) == 1);
    CHECK(kjit::tune::next_power_of_two(0) == 1);
    CHECK(kjit::tune::next_power_of_two(1000) == 1024);
    CHECK(kjit::tune::next_power_of_two(1024) == 1024);
    CHECK(kjit::tune::next_power_of_two(1025) == 2048);
    CHECK(kjit::TuneKey().add_bucketed("n", 1000).text() == kjit::TuneKey().add_bucketed("n", 1024).text());
    CHECK(kjit::TuneKey().add_bucketed("n", 1025).text() != kjit::TuneKey().add_bucketed("n", 1024).text());
    CHECK(kjit::TuneKey().add("rows", 4096).add("dtype", "float").text() == "rows=4096 dtype=float");
    kjit::TuneCandidate c{.kernel = "tile<64>", .defines = {"UNROLL=4"}, .block = {128, 2}, .shared_mem = 1024};
    CHECK(c.text() == "tile<64> block (128,2,1) smem 1024 -DUNROLL=4");
  }

  TEST_CASE("a TuneKey's text is built in place: nothing allocated up to k_inline and the same text past it") {
    REQUIRE(kjit::test::lock_probe_sees_this_executable());
    std::mt19937_64 rng(57);
    for (int round = 0; round < 200; ++round) {
      // Random parts; the expected text as fmt spells it.
      std::vector<std::string> names, values;
      std::vector<long long> numbers;
      std::vector<int> kinds;
      std::string want;
      const int parts = 1 + static_cast<int>(rng() % 6);
      for (int i = 0; i < parts; ++i) {
        names.push_back(std::string(1 + rng() % 9, static_cast<char>('a' + rng() % 26)));
        kinds.push_back(static_cast<int>(rng() % 3));
        numbers.push_back(static_cast<long long>(rng() % 2000000) - 1000000 + (kinds.back() == 2 ? 1000001 : 0));
        values.push_back(std::string(rng() % 30, static_cast<char>('A' + rng() % 26)));
        const std::string part = kinds.back() == 0   ? fmt::format("{}={}", names.back(), numbers.back())
                                 : kinds.back() == 1 ? fmt::format("{}={}", names.back(), values.back())
                                                     : fmt::format("{}<={}", names.back(),
                                                                   kjit::tune::next_power_of_two(numbers.back()));
        want += (want.empty() ? "" : " ") + part;
      }
      kjit::test::LaunchProbe probe;
      kjit::TuneKey key;
      for (int i = 0; i < parts; ++i) {
        const auto at = static_cast<std::size_t>(i);
        if (kinds[at] == 0) key.add(names[at], numbers[at]);
        else if (kinds[at] == 1) key.add(names[at], values[at]);
        else key.add_bucketed(names[at], numbers[at]);
      }
      const kjit::TuneKey copy = key;
      const auto seen = probe.stop();
      INFO(want);
      CHECK(key.text() == want);
      CHECK(copy.text() == want);
      if (want.size() <= kjit::TuneKey::k_inline) {
        CHECK(seen.allocations == 0);
      } else {
        CHECK(seen.allocations > 0);  // past it the text is on the heap: the probe sees it
      }
    }
  }

  TEST_CASE("KJIT_TUNE is on, off or force") {
    ::unsetenv("KJIT_TUNE");
    CHECK(kjit::tune_mode_from_environment() == kjit::TuneMode::on);
    ::setenv("KJIT_TUNE", "off", 1);
    CHECK(kjit::tune_mode_from_environment() == kjit::TuneMode::off);
    ::setenv("KJIT_TUNE", "force", 1);
    CHECK(kjit::tune_mode_from_environment() == kjit::TuneMode::force);
    ::setenv("KJIT_TUNE", "sometimes", 1);
    CHECK_THROWS_AS(kjit::tune_mode_from_environment(), kjit::UsageError);
    ::unsetenv("KJIT_TUNE");
  }

  TEST_CASE("a decision stored through a Runtime is found by a fresh one and not under another key") {
    kjit::test::TempDir dir;
    const auto key = kjit::tune::decision_key(fields());
    {
      kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
      kjit::RuntimeAccess::entries(rt).store_entry(key, kjit::tune::encode_decision(key, decision()));
    }
    kjit::Runtime fresh(kjit::test::quiet_config(dir.path()));
    auto bytes = kjit::RuntimeAccess::entries(fresh).find_entry(key);
    REQUIRE(bytes.has_value());
    auto d = kjit::tune::decode_decision(key, *bytes);
    REQUIRE(d.has_value());
    CHECK(d->chosen == 1);
    auto other = fields();
    other.device_name = "NVIDIA H200";
    CHECK_FALSE(kjit::RuntimeAccess::entries(fresh).find_entry(kjit::tune::decision_key(other)).has_value());
    CHECK(fresh.stats().compiles == 0);
  }

  TEST_CASE("kjit cache ls --tuning lists decisions and leaves compile results out") {
    kjit::test::TempDir dir;
    const auto key = kjit::tune::decision_key(fields());
    {
      kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
      kjit::RuntimeAccess::entries(rt).store_entry(key, kjit::tune::encode_decision(key, decision()));
      rt.compile(kjit::Program("plain.cu", "extern \"C\" __global__ void k(float* p) { p[0] = 1; }"),
                 kjit::CompileOptions{.arch = kjit::Arch::sm(90)});
    }
    const std::string kjit_cli = std::string(KJIT_BINARY_DIR) + "/cli/kjit --cache-dir " + dir.path().string();
    auto all = kjit::test::run_command(kjit_cli + " cache ls --json");
    CHECK(all.code == 0);
    CHECK(nlohmann::json::parse(all.out).size() == 2);
    auto tuning = kjit::test::run_command(kjit_cli + " cache ls --tuning --json");
    CHECK(tuning.code == 0);
    const auto j = nlohmann::json::parse(tuning.out);
    REQUIRE(j.size() == 1);
    CHECK(j[0]["key"] == key.hex());
    CHECK(j[0]["chosen"] == 1);
    CHECK(j[0]["device"] == "NVIDIA H100 80GB HBM3");
    CHECK(j[0]["tuning_key"] == "n<=1048576");
    CHECK(j[0]["labels"].size() == 3);
    auto text = kjit::test::run_command(kjit_cli + " cache ls --tuning");
    CHECK(text.out.find("* b") != std::string::npos);
    CHECK(text.out.find("10.250 us") != std::string::npos);
    CHECK(text.out.find("1 decision") != std::string::npos);
  }

  TEST_CASE("a decision with speed-of-light figures keeps them and says why the winner won") {
    kjit::test::TempDir dir;
    std::mt19937 gen(12);
    auto d = decision();
    const double dram_b = 60 + static_cast<double>(gen() % 300) / 10, dram_a = 20 + static_cast<double>(gen() % 300) / 10;
    d.sol = {{{"dram__throughput.avg.pct_of_peak_sustained_elapsed", dram_a},
              {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 31.5},
              {"gpu__time_duration.sum", 12400}},
             {{"dram__throughput.avg.pct_of_peak_sustained_elapsed", dram_b},
              {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 12.3},
              {"gpu__time_duration.sum", 10100}},
             {}};
    const auto key = kjit::tune::decision_key(fields());
    const auto back = kjit::tune::decode_decision(key, kjit::tune::encode_decision(key, d));
    REQUIRE(back.has_value());
    REQUIRE(back->sol.size() == 3);
    auto sorted = [](std::vector<std::pair<std::string, double>> v) {
      std::sort(v.begin(), v.end());
      return v;
    };
    CHECK(sorted(back->sol[1]) == sorted(d.sol[1]));
    CHECK(back->sol[2].empty());
    const std::string why = kjit::tune::explain_sol(*back);
    CHECK(why == fmt::format("DRAM {:.1f}% vs {:.1f}%, Compute 12.3% vs 31.5%, Duration 10.1 us vs 12.4 us (vs a)",
                             dram_b, dram_a));
    CHECK(kjit::tune::explain_sol(decision()).empty());  // none recorded: nothing to say
    {
      kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
      kjit::RuntimeAccess::entries(rt).store_entry(key, kjit::tune::encode_decision(key, d));
    }
    const std::string kjit_cli = std::string(KJIT_BINARY_DIR) + "/cli/kjit --cache-dir " + dir.path().string();
    auto text = kjit::test::run_command(kjit_cli + " cache ls --tuning");
    CHECK(text.out.find("why: " + why) != std::string::npos);
    auto json = nlohmann::json::parse(kjit::test::run_command(kjit_cli + " cache ls --tuning --json").out);
    CHECK(json[0]["why"] == why);
  }
}
