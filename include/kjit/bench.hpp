// kjit::bench: times GPU work the way the lectures teach (and Triton's do_bench does): run it
// once, estimate its time, warm up for `warmup_ms`, then repeat for `repeat_ms`, each
// repetition between two CUDA events on one stream, optionally after overwriting a buffer
// larger than the L2 cache so no repetition reads what the previous one left there. Returns
// min, median, mean, max and the asked-for quantiles of the per-call times.
//
// For work too short to time one call at a time, cuda_graph captures `graph_calls` calls into
// one CUDA graph and times each graph launch (per-call time = graph time / calls; the L2
// flush then happens once per graph launch).
//
// The callable takes the stream to launch on (LaunchConfig::stream). Throws CudaError when a
// driver call fails and UsageError for options that make no sense.
#pragma once

#include <kjit/export.hpp>

#include <kjit/device.hpp>
#include <kjit/stream.hpp>

#include <functional>
#include <optional>
#include <vector>

namespace kjit {

struct BenchOptions {
  double warmup_ms = 25;                       // like triton.testing.do_bench
  double repeat_ms = 100;
  int min_repetitions = 5;
  int max_repetitions = 10000;
  bool flush_l2 = true;                        // overwrite 2 x L2 before each repetition
  std::vector<double> quantiles = {0.2, 0.8};  // in [0, 1]
  bool cuda_graph = false;
  int graph_calls = 0;                         // calls per graph; 0: enough for ~ 1 ms a graph
  StreamRef stream;                            // {}: a stream of bench's own
};

struct BenchResult {
  double min_ms = 0, median_ms = 0, mean_ms = 0, max_ms = 0;
  std::vector<double> quantile_ms;  // one per BenchOptions::quantiles, same order
  int repetitions = 0;              // timed samples
  int calls_per_sample = 1;         // > 1 with cuda_graph
  std::vector<double> samples_ms;   // per-call time of each sample, in the order taken
};

// `device`: where the timing stream, events and flush buffer live (default: the current one).
KJIT_API BenchResult bench(const std::function<void(CUstream_st*)>& work, const BenchOptions& options = {},
                  std::optional<Device> device = std::nullopt);

// The q-quantile (0..1) of `values` with linear interpolation, as numpy and torch.quantile.
KJIT_API double quantile(std::vector<double> values, double q);

}  // namespace kjit
