// kjit::tune: a tuner's decision as data, its cache key, its entry bytes, and the choice itself.
// Pure functions (no CUDA): the CPU tests cover them, and the Tuner (tune/tuner.cpp) stores a
// decision as a small entry of kjit's cache (section `tuning`), on the disk and the remote tier.
#pragma once

#include "core/base/tools_api.hpp"

#include "core/cache/entry.hpp"
#include "core/cache/key.hpp"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::tune {

// What a decision depends on; any change gives another key (the decision is not reused).
struct DecisionKeyFields {
  std::string source_key;               // the kernel source's request key (source, headers, options)
  std::vector<std::string> candidates;  // each candidate's canonical text, in order
  std::string device_name;
  int compute_capability = 0;
  int driver_version = 0;
  std::string kjit_version;
  std::string tuning_key;               // the caller's key (sizes, dtypes), bucketed as asked
  std::string launch;                   // a spec's grid and arguments (empty: the caller launches)
};

cache::Key decision_key(const DecisionKeyFields& fields);

struct Decision {
  std::size_t chosen = 0;
  std::vector<std::string> labels;           // the candidates, in order
  std::vector<double> median_us;             // per candidate; < 0 when not timed to the end
  std::vector<std::string> why_not;          // per candidate: empty, or why it was skipped or dropped
  double noise = 0;                          // the relative margin within which times tie
  std::string tuning_key;
  std::string device;
  std::string name;                          // the tuner's ("softmax.cu", "scale.cu: scale")
  // With KJIT_TUNE_METRICS=sol: each candidate's speed-of-light figures (metric name -> value,
  // as kjit::Profiler reads them), measured for the winner and the runners-up; empty otherwise.
  std::vector<std::vector<std::pair<std::string, double>>> sol;
};

// "DRAM 91.0% vs 64.2%, Compute 12.1% vs 30.5%, Duration 10.2 us vs 14.8 us (vs 2: block 128)":
// why the winner won, from its figures against the fastest measured runner-up's; empty when
// no figures were recorded.
KJIT_TOOLS_API std::string explain_sol(const Decision& decision);

// The decision as the bytes of an entry stored under `key` (JSON in a `tuning` section).
std::string encode_decision(const cache::Key& key, const Decision& decision);
// nullopt (and why) for bytes that are not a whole, checked decision entry recorded under `key`.
KJIT_TOOLS_API std::optional<Decision> decode_decision(const cache::Key& key, std::string_view bytes, std::string* why = nullptr);

// The winner among timed candidates (nullopt: not timed, or failed): the fastest, except that
// every candidate within `noise` of it ties and a tie goes to the earliest in the list, so that
// two runs (or nodes) with close timings pick the same one. nullopt when none was timed.
std::optional<std::size_t> choose(const std::vector<std::optional<double>>& times, double noise);

// Successive halving: time every live candidate with a small budget, drop those clearly slower
// than the best (more than `drop_above` times its time), double the budget, and go on while more
// than one is left and rounds remain; the last round's medians decide. `time(i, round)` returns
// candidate i's median for that round, or nullopt when it failed (it is then out).
struct HalvingOptions {
  int rounds = 3;
  double drop_above = 1.3;
};
struct HalvingResult {
  std::vector<std::optional<double>> times;  // each candidate's last median (nullopt: failed)
  std::vector<bool> finalists;                // timed in the last round: the ones that compete
  std::vector<int> rounds_run;                // rounds each candidate was timed
  std::vector<std::string> why_not;           // "dropped in round R: 2.1x the best" / failures
};
HalvingResult successive_halving(std::size_t count,
                                 const std::function<std::optional<double>(std::size_t, int, std::string*)>& time,
                                 const HalvingOptions& options);

// The smallest power of two >= value (1 for value <= 1): a tuning key's bucket.
long long next_power_of_two(long long value);

}  // namespace kjit::tune
