// Hardware-counter names without a GPU: "sol" and launch__ names expanded (profile/metric_names),
// and CUPTI's profiler host API (profile/metric_config, kjit::plan_metrics) for a named chip:
// a config image and a pass count for "sol" on GH100, computed once; an unknown name or chip is
// a UsageError that lists the closest valid names. libnvperf_host runs on a CPU; where CUPTI
// cannot be loaded the host-API cases say so and are skipped.
#include <kjit/error.hpp>
#include <kjit/tools/profile.hpp>

#include "tools/profile/cupti_library.hpp"
#include "core/base/edit_distance.hpp"
#include "tools/profile/metric_config.hpp"
#include "tools/profile/metric_names.hpp"
#include "support/skip.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

namespace {

// Why CUPTI's profiler host API is not here; empty when it is.
std::string host_api_missing() {
  std::string why;
  const auto* api = kjit::profile::cupti(&why);
  if (api == nullptr) return why.empty() ? "no CUPTI" : why;
  return api->metrics_missing;
}

std::string usage_error_of(const std::vector<std::string>& metrics, const std::string& chip) {
  try {
    (void)kjit::plan_metrics(metrics, chip);
  } catch (const kjit::UsageError& e) {
    return e.what();
  }
  return "(no UsageError)";
}

}  // namespace

TEST_SUITE("profile MetricConfig") {
  TEST_CASE("sol expands to ncu's speed-of-light names and launch__ names stay out of the counters") {
    const auto r = kjit::profile::expand_metrics({"sol"});
    CHECK(r.sol);
    CHECK(r.names == kjit::profile::sol_metrics());
    REQUIRE(r.counters.size() == 7);
    CHECK(r.counters.front() == "gpu__time_duration.sum");
    for (const auto& c : r.counters) CHECK_FALSE(kjit::profile::is_launch_metric(c));
    CHECK(std::count(r.names.begin(), r.names.end(), "launch__registers_per_thread") == 1);
    CHECK(kjit::profile::sol_title("dram__throughput.avg.pct_of_peak_sustained_elapsed") == "DRAM %");
    CHECK(kjit::profile::sol_title("sm__warps_active.avg.pct_of_peak_sustained_active") == "Achieved Occupancy %");
    CHECK(kjit::profile::sol_title("launch__grid_size") == "Grid");

    // A list: comma-separated entries, each name once, and the duration always read.
    const auto l = kjit::profile::expand_metrics({"dram__bytes_read.sum, launch__block_size", "dram__bytes_read.sum"});
    CHECK_FALSE(l.sol);
    CHECK(l.names == std::vector<std::string>{"dram__bytes_read.sum", "launch__block_size"});
    CHECK(l.counters == std::vector<std::string>{"dram__bytes_read.sum", "gpu__time_duration.sum"});

    CHECK_THROWS_AS(kjit::profile::expand_metrics({}), kjit::UsageError);
    CHECK_THROWS_AS(kjit::profile::expand_metrics({"sol,"}), kjit::UsageError);
    try {
      kjit::profile::expand_metrics({"launch__registers"});
      FAIL("no UsageError");
    } catch (const kjit::UsageError& e) {
      CHECK(std::string(e.what()).find("launch__registers_per_thread") != std::string::npos);
    }
  }

  TEST_CASE("launch__ figures come from the kernel record") {
    kjit::profile::KernelEvent k;
    k.grid[0] = 37, k.grid[1] = 3, k.grid[2] = 2;
    k.block[0] = 96, k.block[1] = 2;
    k.registers = 41;
    k.static_shared = 1000;
    k.dynamic_shared = 24;
    CHECK(kjit::profile::launch_value("launch__grid_size", k) == 37 * 3 * 2);
    CHECK(kjit::profile::launch_value("launch__block_size", k) == 192);
    CHECK(kjit::profile::launch_value("launch__thread_count", k) == 37 * 3 * 2 * 192);
    CHECK(kjit::profile::launch_value("launch__registers_per_thread", k) == 41);
    CHECK(kjit::profile::launch_value("launch__shared_mem_per_block_static", k) == 1000);
    CHECK(kjit::profile::launch_value("launch__shared_mem_per_block_dynamic", k) == 24);
    CHECK(kjit::profile::launch_value("launch__shared_mem_per_block", k) == 1024);
  }

  TEST_CASE("sol on GH100 needs passes and its config image is made once") {
    if (const auto why = host_api_missing(); !why.empty()) KJIT_SKIP("CUPTI's profiler host API is not here: " << why);
    const auto plan = kjit::plan_metrics({"sol"}, "GH100");
    CHECK(plan.chip == "GH100");
    CHECK(plan.passes > 0);
    CHECK(plan.names == kjit::profile::sol_metrics());
    CHECK(plan.counters.size() == 7);
    MESSAGE("sol on GH100: " << plan.passes << " passes");
    std::string why;
    const auto* api = kjit::profile::cupti(&why);
    const auto a = kjit::profile::MetricConfig::get(*api, "GH100", plan.counters);
    const auto b = kjit::profile::MetricConfig::get(*api, "GH100", plan.counters);
    CHECK(a.get() == b.get());  // once per chip and list
    CHECK_FALSE(a->image().empty());
    CHECK(a->passes() == plan.passes);
    // One cheap counter takes fewer passes than the whole set.
    CHECK(kjit::plan_metrics({"gpu__time_duration.sum"}, "GH100").passes < plan.passes);
    // Another chip of another generation has its own config.
    CHECK(kjit::plan_metrics({"sol"}, "AD102").passes > 0);
  }

  TEST_CASE("an unknown metric name is a UsageError naming the closest valid ones") {
    if (const auto why = host_api_missing(); !why.empty()) KJIT_SKIP("CUPTI's profiler host API is not here: " << why);
    const std::string typo = usage_error_of({"dram__throughputt.avg.pct_of_peak_sustained_elapsed"}, "GH100");
    CHECK(typo.find("dram__throughputt.avg.pct_of_peak_sustained_elapsed") != std::string::npos);
    CHECK(typo.find("GH100") != std::string::npos);
    CHECK(typo.find("closest valid names: dram__throughput.avg.pct_of_peak_sustained_elapsed") != std::string::npos);
    // A known base metric without its rollup and submetric: its valid spellings.
    const std::string bare = usage_error_of({"sol", "sm__throughput.avg"}, "GH100");
    CHECK(bare.find("\"sm__throughput.avg\"") != std::string::npos);
    CHECK(bare.find("sm__throughput.avg.pct_of_peak_sustained_elapsed") != std::string::npos);
    // An unknown chip lists the chips CUPTI knows.
    const std::string chip = usage_error_of({"sol"}, "GX999");
    CHECK(chip.find("GX999") != std::string::npos);
    CHECK(chip.find("GH100") != std::string::npos);
  }

  TEST_CASE("edit distance counts insertions deletions and substitutions") {
    CHECK(kjit::base::edit_distance("", "") == 0);
    CHECK(kjit::base::edit_distance("dram", "") == 4);
    CHECK(kjit::base::edit_distance("dram__bytes", "dram__byte") == 1);
    CHECK(kjit::base::edit_distance("lts__t", "ltc__t") == 1);
    CHECK(kjit::base::edit_distance("kitten", "sitting") == 3);
  }

  TEST_CASE("edit distance counts a swap of neighbours as one edit (#57 item 12)") {
    CHECK(kjit::base::edit_distance("cahce", "cache") == 1);
    CHECK(kjit::base::edit_distance("wram", "warm") == 1);
    CHECK(kjit::base::edit_distance("ab", "ba") == 1);
    CHECK(kjit::base::edit_distance("abc", "ca") == 3);  // optimal string alignment: no edit of a swapped pair
    CHECK(kjit::base::edit_distance("ca", "abc") == 3);
    CHECK(kjit::base::edit_distance("kjit", "kjti") == 1);
  }
}
