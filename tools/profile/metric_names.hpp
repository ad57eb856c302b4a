// kjit::profile's metric names, as data: the set "sol" (Nsight Compute's speed-of-light figures),
// the launch__* names (not counters: the range profiler refuses them; they come from the kernel's
// activity record, as registers, grid, block and shared memory), a list of names expanded once
// ("sol" and comma-separated lists), and the titles of the sol table. Pure: no CUPTI here.
// expand_metrics throws UsageError.
#pragma once

#include "tools/profile/recording.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace kjit::profile {

// The kernel's duration; always read with any counter, so that a replayed kernel keeps its time.
inline constexpr std::string_view k_duration_metric = "gpu__time_duration.sum";

struct MetricRequest {
  std::vector<std::string> names;     // every metric asked, "sol" expanded, each once, in order
  std::vector<std::string> counters;  // those read from hardware counters, k_duration_metric included
  bool sol = false;                   // the set "sol" was asked
};

// The names of the set "sol", in the order of its table.
const std::vector<std::string>& sol_metrics();
// Throws UsageError for an empty list or name, or a launch__ name kjit does not know (listing those it knows).
MetricRequest expand_metrics(const std::vector<std::string>& asked);

bool is_launch_metric(std::string_view name);
// A launch__ metric's value from a kernel record (registers per thread, grid and block sizes, shared memory).
double launch_value(std::string_view name, const KernelEvent& kernel);
// A replayed kernel's activity record holds no true duration: each measured launch's kernel
// record takes the measured gpu__time_duration.sum instead (end = start + duration).
void apply_measured_durations(Recording& recording);

// Nsight Compute's column title for a metric of the set "sol" ("DRAM %"); empty for one the sol table leaves out.
std::string_view sol_title(std::string_view name);

}  // namespace kjit::profile
