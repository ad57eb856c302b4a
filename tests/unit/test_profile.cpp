// The profiler's parts that need no GPU: the table's grouping, sorting, limits, shapes, names
// and phases from a Recording built by hand with random times; the Chrome trace against the
// trace event format (every event's fields, flow pairs, track names); the summary's JSON round
// trip; names demangled without parameters; a missing libcupti or driver gives one message and
// an inactive Profiler; `kjit profile` passes the program's output and exit code through.
#include <kjit/error.hpp>
#include <kjit/tools/profile.hpp>

#include "tools/profile/chrome_trace.hpp"
#include "tools/profile/collector.hpp"
#include "tools/profile/metric_names.hpp"
#include "tools/profile/recording.hpp"
#include "tools/profile/summary.hpp"
#include "core/driver/driver_api.hpp"
#include "support/helpers.hpp"
#include "support/temp_dir.hpp"
#include "support/skip.hpp"

#include <doctest/doctest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>
#include <set>

namespace {

using kjit::profile::HostRange;
using kjit::profile::KernelEvent;
using kjit::profile::LaunchCall;
using kjit::profile::Phase;
using kjit::profile::Recording;

struct Made {
  Recording rec;
  std::map<std::string, std::uint64_t> calls;  // by display name
  std::map<std::string, double> total_us;
  std::map<std::string, double> host_us;
};

// Three kernels (one known to kjit by its name expression, one plain C++ name, one extern "C"),
// random counts and durations, each with its launch call; transfers and phases.
Made make_recording(unsigned seed) {
  std::mt19937_64 gen(seed);
  Made m;
  Recording& r = m.rec;
  r.pid = 4242;
  r.start = 1'000'000'000;
  r.names = {"_Z7softmaxIfLi256EEvPKfPfii", "_Z6squarePKfPfi", "raw_saxpy", "cuLaunchKernel"};
  r.known.push_back({"_Z7softmaxIfLi256EEvPKfPfii", "softmax<float, 256>", "softmax.cu", "abc123", "hit"});
  const std::string display[] = {"softmax<float, 256>", "square", "raw_saxpy"};
  std::uint64_t t = r.start + 1000;
  std::uint32_t correlation = 1;
  for (int i = 0; i < 300; ++i) {
    const std::uint32_t which = static_cast<std::uint32_t>(gen() % 3);
    KernelEvent k;
    k.name = which;
    k.start = t + 500 + gen() % 1000;
    k.end = k.start + 1000 + gen() % 50'000;
    k.stream = 7 + which % 2;
    k.correlation = correlation;
    k.grid[0] = which == 0 ? 4096 : 128 + static_cast<int>(gen() % 2);
    k.block[0] = 256;
    k.registers = 32;
    k.static_shared = which == 0 ? 1024 : 0;
    LaunchCall l;
    l.start = t;
    l.end = t + 2000 + gen() % 3000;
    l.correlation = correlation++;
    l.thread = 99;
    l.api = 3;
    r.kernels.push_back(k);
    r.launches.push_back(l);
    m.calls[display[which]] += 1;
    m.total_us[display[which]] += static_cast<double>(k.end - k.start) / 1e3;
    m.host_us[display[which]] += static_cast<double>(l.end - l.start) / 1e3;
    t = k.end;
  }
  for (int i = 0; i < 5; ++i) {
    r.transfers.push_back({t, t + 3000, 1u << 20, 0, 1, 7, 0, static_cast<std::uint8_t>(kjit::profile::TransferKind::htod)});
    t += 4000;
  }
  r.ranges.push_back({r.start + 10, r.start + 35'000'000, 99, Phase::compile, "softmax.cu", "abc123", "compiled"});
  r.ranges.push_back({r.start + 20, r.start + 34'000'000, 99, Phase::nvrtc, "softmax.cu", "abc123", ""});
  r.ranges.push_back({t, t + 800, 99, Phase::registry_hit, "softmax.cu", "abc123", ""});
  r.ranges.push_back({t, t + 900, 99, Phase::user, "decode", "", ""});
  r.ranges.push_back({t + 1000, t + 1900, 99, Phase::user, "decode", "", ""});
  r.stop = t + 10'000;
  return m;
}

// Hardware counters for every third launch of a recording: "sol" with random figures, the
// replayed kernels' records without a duration (as CUPTI gives them).
struct Measured {
  std::map<std::string, std::vector<std::vector<double>>> values;  // display name -> samples (counters order)
  std::map<std::string, std::vector<double>> registers;
};

Measured add_metrics(Made& m, unsigned seed) {
  std::mt19937_64 gen(seed);
  Measured out;
  auto& met = m.rec.metrics;
  const auto request = kjit::profile::expand_metrics({"sol"});
  met.names = request.names;
  met.counters = request.counters;
  met.sol = true;
  met.passes = 9;
  const std::string display[] = {"softmax<float, 256>", "square", "raw_saxpy"};
  for (std::size_t i = 0; i < m.rec.kernels.size(); i += 3) {
    auto& k = m.rec.kernels[i];
    k.registers = static_cast<std::uint16_t>(16 + gen() % 64);
    kjit::profile::MetricSample sample;
    sample.correlation = k.correlation;
    for (const auto& c : met.counters) {
      sample.values.push_back(c == "gpu__time_duration.sum" ? 1000.0 + static_cast<double>(gen() % 90'000)
                                                            : static_cast<double>(gen() % 10'000) / 100.0);
    }
    // Replayed: the record's own times are meaningless; the measured duration replaces them.
    const std::string& name = display[k.name];
    const double old_us = static_cast<double>(k.end - k.start) / 1e3;
    k.end = k.start;
    m.total_us[name] += sample.values[0] / 1e3 - old_us;
    out.values[name].push_back(sample.values);
    out.registers[name].push_back(k.registers);
    met.samples.push_back(std::move(sample));
  }
  return out;
}

}  // namespace

TEST_SUITE("profile") {
  TEST_CASE("measured launches carry their counters into the rows and the table names ncu's columns") {
    for (unsigned seed : {4u, 5u}) {
      Made m = make_recording(seed);
      const Measured measured = add_metrics(m, seed);
      kjit::profile::apply_measured_durations(m.rec);
      const auto s = kjit::profile::summarize(m.rec, {});
      CHECK(s.metric_sol);
      CHECK(s.metric_passes == 9);
      CHECK(s.metric_names == kjit::profile::sol_metrics());
      CHECK(s.measured_launches == m.rec.metrics.samples.size());
      const auto& counters = m.rec.metrics.counters;
      for (const auto& row : s.kernels) {
        INFO(row.name);
        CHECK(row.gpu_total_us == doctest::Approx(m.total_us[row.name]));  // measured durations included
        const auto& samples = measured.values.at(row.name);
        CHECK(row.measured == samples.size());
        REQUIRE(row.metrics.size() == s.metric_names.size());
        for (std::size_t i = 0; i < row.metrics.size(); ++i) {
          const auto& metric = row.metrics[i];
          CHECK(metric.name == s.metric_names[i]);
          std::vector<double> v;
          if (kjit::profile::is_launch_metric(metric.name)) {
            if (metric.name == "launch__registers_per_thread") v = measured.registers.at(row.name);
            else continue;
          } else {
            const auto c = static_cast<std::size_t>(std::find(counters.begin(), counters.end(), metric.name) - counters.begin());
            for (const auto& sample : samples) v.push_back(sample[c]);
          }
          double sum = 0;
          for (double x : v) sum += x;
          CHECK(metric.mean == doctest::Approx(sum / static_cast<double>(v.size())));
          CHECK(metric.min == *std::min_element(v.begin(), v.end()));
          CHECK(metric.max == *std::max_element(v.begin(), v.end()));
        }
      }
      const std::string text = kjit::format_table(s, {});
      INFO(text);
      for (const char* title : {"Duration", "Compute Throughput %", "Memory Throughput %", "DRAM %",
                                "Achieved Occupancy %", "Registers", "Grid", "Block", "Measured"}) {
        CHECK(text.find(title) != std::string::npos);
      }
      CHECK(text.find(fmt::format("Hardware counters: {} launches measured, 9 passes each", s.measured_launches)) !=
            std::string::npos);
      CHECK(text.find("serialized") != std::string::npos);
      CHECK(text.find("lts__throughput") == std::string::npos);  // sol's table: ncu's columns only
      CHECK(text.find("4096") != std::string::npos);             // softmax's grid
      // Its figures: a mean with its range where launches differ.
      CHECK(text.find(") ") != std::string::npos);

      // JSON carries every metric by its full name, and reads back to the same table.
      const auto j = nlohmann::json::parse(kjit::to_json(s));
      CHECK(j["metrics"]["passes"] == 9);
      CHECK(j["metrics"]["names"].size() == s.metric_names.size());
      CHECK(j["kernels"][0]["metrics"][5]["name"] == "lts__throughput.avg.pct_of_peak_sustained_elapsed");
      const auto back = kjit::profile_summary_from_json(kjit::to_json(s));
      CHECK(back.measured_launches == s.measured_launches);
      CHECK(kjit::format_table(back, {}) == text);
    }
  }

  TEST_CASE("a list of metrics shows each by its full name and a refusal is said under the table") {
    Made m = make_recording(8);
    auto& met = m.rec.metrics;
    met.names = {"dram__bytes_read.sum", "launch__block_size"};
    met.counters = {"dram__bytes_read.sum", "gpu__time_duration.sum"};
    met.passes = 1;
    met.samples.push_back({m.rec.kernels[0].correlation, {2.5e9, 4000}});
    met.samples.push_back({m.rec.kernels[1].correlation, {1.0e9, 3000}});
    met.message = "hardware counters refused (cuptiRangeProfilerStart: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES): ...";
    kjit::profile::apply_measured_durations(m.rec);
    CHECK(m.rec.kernels[0].end - m.rec.kernels[0].start == 4000);
    CHECK(m.rec.kernels[1].end - m.rec.kernels[1].start == 3000);
    const auto s = kjit::profile::summarize(m.rec, {.by_shape = true});
    const std::string text = kjit::format_table(s, {.by_shape = true});
    INFO(text);
    CHECK(text.find("dram__bytes_read.sum") != std::string::npos);
    CHECK(text.find("launch__block_size") != std::string::npos);
    CHECK(text.find("2 launches measured, 1 pass each") != std::string::npos);
    CHECK(text.find("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES") != std::string::npos);
    CHECK(text.find("Compute Throughput") == std::string::npos);
    // Without metrics the table is as it was: no counters section.
    Made plain = make_recording(8);
    CHECK(kjit::format_table(kjit::profile::summarize(plain.rec, {}), {}).find("Hardware counters") == std::string::npos);
  }

  TEST_CASE("the Chrome trace carries a measured launch's counters as its kernel event's arguments") {
    Made m = make_recording(9);
    add_metrics(m, 9);
    const auto j = nlohmann::json::parse(kjit::profile::chrome_trace(m.rec));
    std::set<std::uint32_t> measured;
    for (const auto& sample : m.rec.metrics.samples) measured.insert(sample.correlation);
    std::size_t with = 0;
    for (const auto& e : j["traceEvents"]) {
      if (e.value("cat", "") != "kernel") continue;
      const auto corr = e["args"]["correlation"].get<std::uint32_t>();
      CHECK(e["args"].contains("hardware counters") == (measured.count(corr) == 1));
      if (e["args"].contains("hardware counters")) {
        ++with;
        CHECK(e["args"]["hardware counters"].size() == m.rec.metrics.counters.size());
        CHECK(e["args"]["hardware counters"].contains("dram__throughput.avg.pct_of_peak_sustained_elapsed"));
        CHECK(e["args"]["serialized and replayed"] == 9);
      }
    }
    CHECK(with == measured.size());
  }

  TEST_CASE("the table groups kernels by name and counts every call and nanosecond") {
    for (unsigned seed : {1u, 2u, 3u}) {
      Made m = make_recording(seed);
      auto s = kjit::profile::summarize(m.rec, {});
      REQUIRE(s.recorded);
      CHECK(s.kernel_count == 300);
      CHECK(s.kernel_names == 3);
      REQUIRE(s.kernels.size() == 3);
      double percent = 0;
      for (const auto& row : s.kernels) {
        INFO(row.name);
        REQUIRE(m.calls.count(row.name) == 1);
        CHECK(row.calls == m.calls[row.name]);
        CHECK(row.gpu_total_us == doctest::Approx(m.total_us[row.name]));
        CHECK(row.host_enqueue_total_us == doctest::Approx(m.host_us[row.name]));
        CHECK(row.gpu_mean_us == doctest::Approx(row.gpu_total_us / static_cast<double>(row.calls)));
        CHECK(row.gpu_min_us <= row.gpu_mean_us);
        CHECK(row.gpu_max_us >= row.gpu_mean_us);
        percent += row.gpu_percent;
      }
      CHECK(percent == doctest::Approx(100.0));
      // The name expression kjit compiled it by, and its program.
      auto known = std::find_if(s.kernels.begin(), s.kernels.end(), [](auto& r) { return r.name == "softmax<float, 256>"; });
      REQUIRE(known != s.kernels.end());
      CHECK(known->program == "softmax.cu");
      // Sorted by GPU total, largest first.
      CHECK(std::is_sorted(s.kernels.begin(), s.kernels.end(),
                           [](auto& a, auto& b) { return a.gpu_total_us > b.gpu_total_us; }));
    }
  }

  TEST_CASE("the table sorts by each column and shows at most the limit") {
    Made m = make_recording(9);
    for (std::string key : {"gpu_total", "gpu_mean", "gpu_min", "gpu_max", "calls", "host_total"}) {
      auto s = kjit::profile::summarize(m.rec, {.sort_by = key});
      auto field = [&](const kjit::ProfileKernelRow& r) {
        return key == "gpu_total" ? r.gpu_total_us : key == "gpu_mean" ? r.gpu_mean_us : key == "gpu_min" ? r.gpu_min_us
             : key == "gpu_max" ? r.gpu_max_us : key == "calls" ? static_cast<double>(r.calls) : r.host_enqueue_total_us;
      };
      for (std::size_t i = 1; i < s.kernels.size(); ++i) CHECK(field(s.kernels[i - 1]) >= field(s.kernels[i]));
    }
    auto by_name = kjit::profile::summarize(m.rec, {.sort_by = "name"});
    CHECK(std::is_sorted(by_name.kernels.begin(), by_name.kernels.end(), [](auto& a, auto& b) { return a.name < b.name; }));
    auto limited = kjit::profile::summarize(m.rec, {.sort_by = "calls", .limit = 2});
    CHECK(limited.kernels.size() == 2);
    CHECK(limited.kernel_names == 3);
    CHECK(limited.kernel_count == 300);
    const std::string text = kjit::format_table(limited, {.limit = 2});
    CHECK(text.find("300 kernel launches of 3 kernels (2 shown)") != std::string::npos);
    CHECK_THROWS_AS(kjit::profile::summarize(m.rec, {.sort_by = "fastest"}), kjit::UsageError);
    // Long names end in "..." in the text, whole in the data.
    auto narrow = kjit::profile::summarize(m.rec, {.name_width = 8});
    const std::string narrow_text = kjit::format_table(narrow, {.name_width = 8});
    CHECK(narrow_text.find("softm...") != std::string::npos);
    CHECK(narrow_text.find("softmax<float") == std::string::npos);
    CHECK(std::any_of(narrow.kernels.begin(), narrow.kernels.end(), [](auto& r) { return r.name == "softmax<float, 256>"; }));
  }

  TEST_CASE("by shape gives one row per kernel and launch shape") {
    Made m = make_recording(5);
    auto s = kjit::profile::summarize(m.rec, {.by_shape = true});
    std::set<std::pair<std::string, std::string>> expected;
    for (const auto& k : m.rec.kernels) {
      const std::string name = k.name == 0 ? "softmax<float, 256>" : kjit::profile::short_kernel_name(m.rec.names[k.name]);
      expected.insert({name, fmt::format("grid ({},{},{}) block ({},{},{}) smem {}", k.grid[0], k.grid[1], k.grid[2],
                                         k.block[0], k.block[1], k.block[2], k.static_shared + k.dynamic_shared)});
    }
    CHECK(s.kernels.size() == expected.size());
    std::uint64_t calls = 0;
    for (const auto& r : s.kernels) {
      CHECK(expected.count({r.name, r.shape}) == 1);
      calls += r.calls;
    }
    CHECK(calls == 300);
    const std::string text = kjit::format_table(s, {.by_shape = true});
    CHECK(text.find("Shape") != std::string::npos);
    CHECK(text.find("grid (4096,1,1) block (256,1,1) smem 1024") != std::string::npos);
  }

  TEST_CASE("the phase table lists kjit phases in request order then launch enqueue and user ranges") {
    Made m = make_recording(11);
    auto s = kjit::profile::summarize(m.rec, {});
    std::vector<std::string> names;
    for (const auto& p : s.phases) names.push_back(p.phase);
    CHECK(names == std::vector<std::string>{"registry hit", "compile", "nvrtc", "launch enqueue", "decode"});
    auto decode = std::find_if(s.phases.begin(), s.phases.end(), [](auto& p) { return p.phase == "decode"; });
    CHECK(decode->count == 2);
    CHECK(decode->total_us == doctest::Approx(1.8));
    CHECK(decode->max_us == doctest::Approx(0.9));
    auto launches = std::find_if(s.phases.begin(), s.phases.end(), [](auto& p) { return p.phase == "launch enqueue"; });
    CHECK(launches->count == 300);
    const std::string text = kjit::format_table(s);
    for (const char* column : {"Name", "Calls", "GPU total", "GPU mean", "GPU min", "GPU max", "% GPU", "Host enqueue",
                               "Host phase", "Transfer", "memcpy HtoD", "5.00 MiB"}) {
      CHECK_MESSAGE(text.find(column) != std::string::npos, column);
    }
    CHECK(kjit::format_table(kjit::profile::summarize(m.rec, {.phases = false}), {.phases = false}).find("Host phase") ==
          std::string::npos);
  }

  TEST_CASE("kernel names are demangled without return type and parameters") {
    using kjit::profile::short_kernel_name;
    CHECK(short_kernel_name("_Z6squarePKfPfi") == "square");
    CHECK(short_kernel_name("_Z7softmaxIfLi256EEvPKfPfii") == "softmax<float, 256>");
    CHECK(short_kernel_name("_ZN4kjit7kernels4meanIfEEvPKfPfi") == "kjit::kernels::mean<float>");
    CHECK(short_kernel_name("raw_saxpy") == "raw_saxpy");
    CHECK(short_kernel_name("_Znot_really") == "_Znot_really");
    CHECK(kjit::profile::demangle("_Z6squarePKfPfi") == "square(float const*, float*, int)");
  }

  TEST_CASE("the Chrome trace follows the trace event format with a flow from each launch to its kernel") {
    Made m = make_recording(21);
    const std::string text = kjit::profile::chrome_trace(m.rec);
    const auto j = nlohmann::json::parse(text);
    REQUIRE(j.contains("traceEvents"));
    const auto& events = j["traceEvents"];
    std::map<std::uint64_t, int> starts, finishes;
    std::set<std::int64_t> host_tids, gpu_tids;
    int kernels = 0, launches = 0, phases = 0, users = 0, named_tracks = 0;
    for (const auto& e : events) {
      REQUIRE(e.contains("ph"));
      REQUIRE(e.contains("pid"));
      REQUIRE(e.contains("tid"));
      const std::string ph = e["ph"];
      CHECK((ph == "X" || ph == "s" || ph == "f" || ph == "M"));
      if (ph == "M") {
        CHECK(e["args"].contains(e["name"] == "process_sort_index" ? "sort_index" : "name"));
        if (e["name"] == "thread_name") ++named_tracks;
        continue;
      }
      REQUIRE(e.contains("ts"));
      CHECK(e["ts"].is_number());
      CHECK(e["ts"].get<double>() >= 0);
      if (ph == "X") {
        REQUIRE(e.contains("dur"));
        CHECK(e["dur"].get<double>() >= 0);
        const std::string cat = e["cat"];
        if (cat == "kernel") {
          ++kernels;
          gpu_tids.insert(e["tid"].get<std::int64_t>());
          for (const char* arg : {"grid", "block", "registers per thread", "static shared memory",
                                  "dynamic shared memory", "stream", "correlation"}) {
            CHECK_MESSAGE(e["args"].contains(arg), arg);
          }
          CHECK(e["pid"].get<std::int64_t>() != 4242);
          if (e["name"] == "softmax<float, 256>") {
            CHECK(e["args"]["program"] == "softmax.cu");
            CHECK(e["args"]["cache key"] == "abc123");
            CHECK(e["args"]["cache outcome"] == "hit");
          }
        } else if (cat == "launch") {
          ++launches;
          CHECK(e["pid"] == 4242);
          host_tids.insert(e["tid"].get<std::int64_t>());
        } else if (cat == "kjit") {
          ++phases;
          CHECK(e["args"]["program"] == "softmax.cu");
        } else if (cat == "user") {
          ++users;
        }
      } else {
        CHECK(e["cat"] == "launch");
        const auto id = e["id"].get<std::uint64_t>();
        if (ph == "s") {
          ++starts[id];
          CHECK(e["pid"] == 4242);
        } else {
          ++finishes[id];
          CHECK(e["bp"] == "e");
          CHECK(e["pid"].get<std::int64_t>() != 4242);
        }
      }
    }
    CHECK(kernels == 300);
    CHECK(launches == 300);
    CHECK(phases == 3);
    CHECK(users == 2);
    CHECK(starts.size() == 300);
    CHECK(starts == finishes);  // every flow starts on the host and ends at its kernel
    CHECK(named_tracks == static_cast<int>(host_tids.size() + gpu_tids.size()));
  }

  TEST_CASE("the Chrome trace escapes names that JSON would not take as they are") {
    Made m = make_recording(4);
    const std::string odd = "say \"hi\" \\ then\ttab\nline \x01";
    m.rec.ranges.push_back({m.rec.start + 5, m.rec.start + 9, 99, Phase::user, odd, "", ""});
    const auto j = nlohmann::json::parse(kjit::profile::chrome_trace(m.rec));
    int found = 0;
    for (const auto& e : j["traceEvents"]) {
      if (e.value("cat", "") == "user" && e["name"] == odd) {
        CHECK(e["args"]["range"] == odd);
        ++found;
      }
    }
    CHECK(found == 1);
  }

  TEST_CASE("a summary survives its JSON form and other text is refused") {
    Made m = make_recording(33);
    auto s = kjit::profile::summarize(m.rec, {.by_shape = true});
    auto back = kjit::profile_summary_from_json(kjit::to_json(s));
    CHECK(back.recorded);
    CHECK(back.kernel_count == s.kernel_count);
    REQUIRE(back.kernels.size() == s.kernels.size());
    for (std::size_t i = 0; i < s.kernels.size(); ++i) {
      CHECK(back.kernels[i].name == s.kernels[i].name);
      CHECK(back.kernels[i].shape == s.kernels[i].shape);
      CHECK(back.kernels[i].calls == s.kernels[i].calls);
      CHECK(back.kernels[i].gpu_total_us == doctest::Approx(s.kernels[i].gpu_total_us));
    }
    CHECK(back.phases.size() == s.phases.size());
    CHECK(kjit::format_table(back, {.by_shape = true}) == kjit::format_table(s, {.by_shape = true}));
    CHECK_THROWS_AS(kjit::profile_summary_from_json("{\"kernels\": 3}"), kjit::UsageError);
    CHECK_THROWS_AS(kjit::profile_summary_from_json("not json"), kjit::UsageError);
  }

  TEST_CASE("without libcupti the profiler says so once and records nothing") {
    ::setenv("KJIT_CUPTI_LIBRARY", "/nonexistent/libcupti.so.13", 1);
    std::vector<std::string> said;
    kjit::ProfileOptions options;
    options.log = [&](kjit::LogLevel, std::string_view m) { said.emplace_back(m); };
    {
      kjit::Profiler p(options);
      CHECK_FALSE(p.active());
      CHECK(p.message().find("CUPTI") != std::string::npos);
      CHECK(p.message().find("/nonexistent/libcupti.so.13") != std::string::npos);
      CHECK_FALSE(kjit::profile::recording());
      auto s = p.summary();
      CHECK_FALSE(s.recorded);
      CHECK(p.table().find("nothing recorded") != std::string::npos);
      { auto r = kjit::Profiler::range("decode"); }
      CHECK_NOTHROW(p.stop());
    }
    kjit::Profiler again(options);
    CHECK_FALSE(again.active());
    REQUIRE(said.size() == 1);  // once per process
    CHECK(said[0].find("runs unprofiled") != std::string::npos);
    ::unsetenv("KJIT_CUPTI_LIBRARY");
  }

  TEST_CASE("without a GPU the profiler says there is no driver") {
    if (kjit::driver::try_driver() != nullptr) {
      KJIT_SKIP("a CUDA driver is here: the GPU tests cover the profiler");
    }
    std::vector<std::string> said;
    kjit::ProfileOptions options;
    options.log = [&](kjit::LogLevel level, std::string_view m) {
      CHECK(level == kjit::LogLevel::warn);
      said.emplace_back(m);
    };
    kjit::Profiler p(options);
    CHECK_FALSE(p.active());
    CHECK(p.message().find("no CUDA driver") != std::string::npos);
    CHECK(said.size() == 1);
    // A second Profiler may start after a failed one: nothing is left open.
    kjit::Profiler q(options);
    CHECK(q.message() == p.message());
  }

  TEST_CASE("kjit profile passes the program's output and exit code through") {
    const std::string kjit_cli = std::string(KJIT_BINARY_DIR) + "/cli/kjit";
    auto r = kjit::test::run_command(kjit_cli + " profile -- /bin/sh -c 'echo from-the-program; exit 7' 2>&1");
    CHECK(r.code == 7);
    CHECK(r.out.rfind("from-the-program\n", 0) == 0);
    CHECK(r.out.find("wrote no profile") != std::string::npos);  // no CUDA call: nothing to show
    auto j = kjit::test::run_command(kjit_cli + " profile --json -- /bin/sh -c 'exit 5'");
    CHECK(j.code == 5);
    const auto doc = nlohmann::json::parse(j.out);
    CHECK(doc["exit_code"] == 5);
    CHECK(doc["processes"].empty());
    auto sig = kjit::test::run_command(kjit_cli + " profile -- /bin/sh -c 'kill -TERM $$' 2>&1");
    CHECK(sig.code == 128 + 15);
    CHECK(kjit::test::run_command(kjit_cli + " profile --sort fastest -- /bin/true 2>&1").code == 2);
    auto missing = kjit::test::run_command(kjit_cli + " profile -- /nonexistent/program 2>&1");
    CHECK(missing.code == 2);
    CHECK(missing.out.find("/nonexistent/program") != std::string::npos);
    CHECK(kjit::test::run_command(kjit_cli + " profile 2>&1").code == 2);
    kjit::test::TempDir dir;
    auto file = kjit::test::run_command(kjit_cli + " profile -o " + (dir.path() / "report.txt").string() +
                                        " -- /bin/sh -c 'echo x' 2>/dev/null");
    CHECK(file.code == 0);
    CHECK(file.out == "x\n");  // stdout: the program's output alone (kjit's notices are on stderr)
    CHECK(std::filesystem::exists(dir.path() / "report.txt"));
  }

  TEST_CASE("kjit profile checks --metrics and the launch filter before the program runs") {
    const std::string kjit_cli = std::string(KJIT_BINARY_DIR) + "/cli/kjit";
    kjit::test::TempDir dir;
    const std::string ran = (dir.path() / "ran").string();
    auto refused = [&](const std::string& options) {
      auto r = kjit::test::run_command(kjit_cli + " profile " + options + " -- /bin/sh -c 'touch " + ran + "' 2>&1");
      INFO(options << ": " << r.out);
      CHECK(r.code == 2);
      CHECK_FALSE(std::filesystem::exists(ran));  // refused before the program ran
      return r.out;
    };
    CHECK(refused("--metrics launch__registers").find("launch__registers_per_thread") != std::string::npos);
    CHECK(refused("--metrics 'sol, '").find("empty name") != std::string::npos);
    CHECK(refused("--metrics sol --kernel '(softmax'").find("regular expression") != std::string::npos);
    CHECK(refused("--kernel softmax").find("--metrics") != std::string::npos);
    CHECK(refused("--launch-count 3").find("--metrics") != std::string::npos);
    // Accepted: the program runs (without a GPU it writes no profile, and says why).
    auto ok = kjit::test::run_command(kjit_cli + " profile --metrics sol,launch__shared_mem_per_block -k soft -c 2 -s 1 "
                                      "-- /bin/sh -c 'touch " + ran + "; exit 3' 2>&1");
    CHECK(ok.code == 3);
    CHECK(std::filesystem::exists(ran));
    // What the injection is told: the names as asked ("sol" stays the set) and the filter.
    auto told = kjit::test::run_command(kjit_cli + " profile --metrics sol,dram__bytes.sum -k soft -c 2 -s 1 -- /bin/sh -c "
                                        "'echo $KJIT_PROFILE_METRICS/$KJIT_PROFILE_KERNEL/$KJIT_PROFILE_LAUNCH_COUNT/"
                                        "$KJIT_PROFILE_LAUNCH_SKIP' 2>/dev/null");
    CHECK(told.out.rfind("sol,dram__bytes.sum/soft/2/1\n", 0) == 0);
  }

  // #40 item 11: a Profiler without a log callback printed its warning itself, whatever KJIT_LOG
  // said; it now goes through the library's default log, as a Runtime's does.
  TEST_CASE("a profiler without a callback reports through the default log and KJIT_LOG=error quiets it") {
    if (kjit::driver::try_driver() != nullptr) {
      KJIT_SKIP("a CUDA driver is here: a profiler may record, with nothing to say");
    }
    kjit::test::TempDir tmp;
    const std::string probe = std::string(KJIT_TEST_TOOLS_DIR) + "/kjit_profiler_probe";
    const auto err = tmp / "err.txt";
    auto quiet = kjit::test::run_command("env -u KJIT_CUPTI_LIBRARY KJIT_LOG=error " + probe + " 2>" + err.string());
    CHECK(quiet.code == 0);
    CHECK(quiet.out == "inactive\n");
    CHECK_MESSAGE(kjit::test::read_file(err).empty(), kjit::test::read_file(err));
    auto shown = kjit::test::run_command("env -u KJIT_CUPTI_LIBRARY -u KJIT_LOG " + probe + " 2>" + err.string());
    CHECK(shown.code == 0);
    CHECK(shown.out == "inactive\n");
    const std::string said = kjit::test::read_file(err);
    CHECK_MESSAGE(said.rfind("kjit: warning: profiler: ", 0) == 0, said);
    CHECK(said.find("runs unprofiled") != std::string::npos);
  }
}
