#include "tools/profile/metric_names.hpp"

#include <kjit/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <unordered_map>
#include <utility>

namespace kjit::profile {
namespace {

struct LaunchMetric {
  std::string_view name;
  double (*value)(const KernelEvent&);
};

double product(const std::int32_t (&v)[3]) {
  return static_cast<double>(v[0]) * static_cast<double>(v[1]) * static_cast<double>(v[2]);
}

constexpr std::array<LaunchMetric, 7> k_launch_metrics{{
    {"launch__registers_per_thread", [](const KernelEvent& k) { return static_cast<double>(k.registers); }},
    {"launch__grid_size", [](const KernelEvent& k) { return product(k.grid); }},
    {"launch__block_size", [](const KernelEvent& k) { return product(k.block); }},
    {"launch__thread_count", [](const KernelEvent& k) { return product(k.grid) * product(k.block); }},
    {"launch__shared_mem_per_block_static", [](const KernelEvent& k) { return static_cast<double>(k.static_shared); }},
    {"launch__shared_mem_per_block_dynamic", [](const KernelEvent& k) { return static_cast<double>(k.dynamic_shared); }},
    {"launch__shared_mem_per_block", [](const KernelEvent& k) {
       return static_cast<double>(k.static_shared) + static_cast<double>(k.dynamic_shared);
     }},
}};

// The set "sol" with its table titles ("": in the summary and JSON, not in the table).
constexpr std::array<std::pair<std::string_view, std::string_view>, 12> k_sol{{
    {"gpu__time_duration.sum", "Duration"},
    {"sm__throughput.avg.pct_of_peak_sustained_elapsed", "Compute Throughput %"},
    {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "Memory Throughput %"},
    {"dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM %"},
    {"l1tex__throughput.avg.pct_of_peak_sustained_active", ""},
    {"lts__throughput.avg.pct_of_peak_sustained_elapsed", ""},
    {"sm__warps_active.avg.pct_of_peak_sustained_active", "Achieved Occupancy %"},
    {"launch__registers_per_thread", "Registers"},
    {"launch__grid_size", "Grid"},
    {"launch__block_size", "Block"},
    {"launch__shared_mem_per_block_static", ""},
    {"launch__shared_mem_per_block_dynamic", ""},
}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

const std::vector<std::string>& sol_metrics() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [name, title] : k_sol) out.emplace_back(name);
    return out;
  }();
  return names;
}

bool is_launch_metric(std::string_view name) { return name.rfind("launch__", 0) == 0; }

double launch_value(std::string_view name, const KernelEvent& kernel) {
  for (const auto& m : k_launch_metrics) {
    if (m.name == name) return m.value(kernel);
  }
  return 0.0;
}

std::string_view sol_title(std::string_view name) {
  for (const auto& [metric, title] : k_sol) {
    if (metric == name) return title;
  }
  return {};
}

MetricRequest expand_metrics(const std::vector<std::string>& asked) {
  MetricRequest out;
  auto add = [&](std::string_view name) {
    if (std::find(out.names.begin(), out.names.end(), name) == out.names.end()) out.names.emplace_back(name);
  };
  for (const auto& item : asked) {
    std::string_view rest = item;
    while (true) {
      const std::size_t comma = rest.find(',');
      const std::string_view name = trim(rest.substr(0, comma));
      if (name.empty()) {
        throw UsageError(fmt::format("reading the metrics \"{}\": an empty name; give \"sol\" or metric names in "
                                     "Nsight Compute's spelling, separated by commas",
                                     item));
      }
      if (name == "sol") {
        out.sol = true;
        for (const auto& m : sol_metrics()) add(m);
      } else if (is_launch_metric(name)) {
        const bool known = std::any_of(k_launch_metrics.begin(), k_launch_metrics.end(),
                                       [&](const LaunchMetric& m) { return m.name == name; });
        if (!known) {
          std::string names;
          for (const auto& m : k_launch_metrics) names += fmt::format("{}{}", names.empty() ? "" : ", ", m.name);
          throw UsageError(fmt::format("metric \"{}\": kjit reads launch__ figures from the launch itself and knows "
                                       "these: {}", name, names));
        }
        add(name);
      } else {
        add(name);
      }
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  if (out.names.empty()) throw UsageError("reading the metrics: none given; give \"sol\" or metric names");
  for (const auto& name : out.names) {
    if (!is_launch_metric(name)) out.counters.push_back(name);
  }
  if (std::find(out.counters.begin(), out.counters.end(), k_duration_metric) == out.counters.end()) {
    out.counters.emplace_back(k_duration_metric);
  }
  return out;
}

void apply_measured_durations(Recording& rec) {
  const auto& counters = rec.metrics.counters;
  const auto at = std::find(counters.begin(), counters.end(), k_duration_metric);
  if (at == counters.end() || rec.metrics.samples.empty()) return;
  const std::size_t index = static_cast<std::size_t>(at - counters.begin());
  std::unordered_map<std::uint32_t, double> duration;
  for (const auto& sample : rec.metrics.samples) {
    if (index < sample.values.size()) duration[sample.correlation] = sample.values[index];
  }
  for (auto& k : rec.kernels) {
    auto it = duration.find(k.correlation);
    if (it == duration.end() || !(it->second > 0) || !std::isfinite(it->second)) continue;
    k.end = k.start + static_cast<std::uint64_t>(std::llround(it->second));
  }
}

}  // namespace kjit::profile
