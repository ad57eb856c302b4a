// kjit::bench: CUDA-event timing with warm-up, repetitions chosen by time, an optional L2
// flush and optional CUDA graph capture (see include/kjit/bench.hpp).
#include <kjit/event.hpp>
#include <kjit/memory.hpp>
#include <kjit/bench.hpp>
#include <kjit/error.hpp>

#include "core/driver/driver_api.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <optional>

namespace kjit {
namespace {

using driver::check;

void validate(const BenchOptions& o) {
  auto bad = [](std::string why) { throw UsageError("timing GPU work with kjit::bench: " + why); };
  if (!(o.warmup_ms >= 0)) bad(fmt::format("warmup_ms is {}; it must be 0 or more", o.warmup_ms));
  if (!(o.repeat_ms > 0)) bad(fmt::format("repeat_ms is {}; it must be more than 0", o.repeat_ms));
  if (o.min_repetitions < 1 || o.max_repetitions < o.min_repetitions) {
    bad(fmt::format("min_repetitions {} and max_repetitions {} must satisfy 1 <= min <= max", o.min_repetitions,
                    o.max_repetitions));
  }
  for (double q : o.quantiles) {
    if (!(q >= 0 && q <= 1)) bad(fmt::format("quantile {} is outside [0, 1]", q));
  }
  if (o.graph_calls < 0) bad(fmt::format("graph_calls is {}; it must be 0 (automatic) or more", o.graph_calls));
}

struct GraphExecDeleter {
  void operator()(CUgraphExec g) const {
    if (const auto* api = driver::loaded_driver()) api->cuGraphExecDestroy(g);
  }
};

}  // namespace

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  const double position = q * static_cast<double>(values.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, values.size() - 1);
  return values[below] + (values[above] - values[below]) * (position - static_cast<double>(below));
}

BenchResult bench(const std::function<void(CUstream_st*)>& work, const BenchOptions& options,
                  std::optional<Device> on) {
  validate(options);
  const auto& api = driver::get();
  const Device device = on ? *on : Device::current();
  device.make_current();
  std::optional<Stream> own_stream;
  CUstream stream = options.stream;
  if (!stream) stream = own_stream.emplace(device).handle();

  DeviceBuffer<std::uint32_t> flush_buffer;
  if (options.flush_l2) {
    flush_buffer = DeviceBuffer<std::uint32_t>(std::max<std::size_t>(2 * device.l2_cache_size(), 1 << 20) / 4, device);
  }
  unsigned flush_value = 0;
  auto flush = [&] {
    if (!options.flush_l2) return;
    check(api.cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(flush_buffer.data()), ++flush_value, flush_buffer.size(),
                               stream),
          "cuMemsetD32Async", "flushing the L2 cache between repetitions");
  };
  auto sync = [&] { check(api.cuStreamSynchronize(stream), "cuStreamSynchronize", "waiting for the timed work"); };

  // The first call may compile or load; then an estimate of one repetition (flush included).
  work(stream);
  sync();
  Event start(device), stop(device);
  constexpr int estimate_calls = 5;
  start.record(stream);
  for (int i = 0; i < estimate_calls; ++i) {
    flush();
    work(stream);
  }
  stop.record(stream);
  stop.synchronize();
  const double estimate_ms = std::max(1e-4, double(Event::elapsed_ms(start, stop)) / estimate_calls);

  // With a graph, one sample runs `calls` calls.
  int calls = 1;
  std::unique_ptr<CUgraphExec_st, GraphExecDeleter> graph_exec;
  if (options.cuda_graph) {
    calls = options.graph_calls > 0 ? options.graph_calls
                                    : std::clamp(static_cast<int>(std::ceil(1.0 / estimate_ms)), 1, 1000);
    check(api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture",
          "capturing the timed work into a CUDA graph");
    try {
      for (int i = 0; i < calls; ++i) work(stream);
    } catch (...) {
      CUgraph abandoned = nullptr;
      api.cuStreamEndCapture(stream, &abandoned);
      if (abandoned) api.cuGraphDestroy(abandoned);
      throw;
    }
    CUgraph graph = nullptr;
    check(api.cuStreamEndCapture(stream, &graph), "cuStreamEndCapture",
          "capturing {} calls of the timed work into a CUDA graph (the work must only enqueue "
                      "asynchronous operations on the stream it is given)", calls);
    CUgraphExec exec = nullptr;
    CUresult r = api.cuGraphInstantiateWithFlags(&exec, graph, 0);
    api.cuGraphDestroy(graph);
    check(r, "cuGraphInstantiateWithFlags", "instantiating the CUDA graph of the timed work");
    graph_exec.reset(exec);
  }
  auto run_sample = [&] {
    if (graph_exec) {
      check(api.cuGraphLaunch(graph_exec.get(), stream), "cuGraphLaunch", "launching the CUDA graph of the timed work");
    } else {
      work(stream);
    }
  };

  const double sample_ms = estimate_ms * calls;
  const int warmups = std::max(1, static_cast<int>(options.warmup_ms / sample_ms));
  const int repetitions =
      std::clamp(static_cast<int>(options.repeat_ms / sample_ms), options.min_repetitions, options.max_repetitions);
  for (int i = 0; i < warmups; ++i) run_sample();

  std::vector<Event> starts, stops;
  starts.reserve(static_cast<std::size_t>(repetitions));
  stops.reserve(static_cast<std::size_t>(repetitions));
  for (int i = 0; i < repetitions; ++i) {
    starts.emplace_back(device);
    stops.emplace_back(device);
  }
  for (int i = 0; i < repetitions; ++i) {
    flush();
    starts[static_cast<std::size_t>(i)].record(stream);
    run_sample();
    stops[static_cast<std::size_t>(i)].record(stream);
  }
  sync();

  BenchResult result;
  result.repetitions = repetitions;
  result.calls_per_sample = calls;
  for (int i = 0; i < repetitions; ++i) {
    result.samples_ms.push_back(double(Event::elapsed_ms(starts[static_cast<std::size_t>(i)],
                                                         stops[static_cast<std::size_t>(i)])) / calls);
  }
  const auto& s = result.samples_ms;
  result.min_ms = *std::min_element(s.begin(), s.end());
  result.max_ms = *std::max_element(s.begin(), s.end());
  result.mean_ms = std::accumulate(s.begin(), s.end(), 0.0) / static_cast<double>(s.size());
  result.median_ms = quantile(s, 0.5);
  for (double q : options.quantiles) result.quantile_ms.push_back(quantile(s, q));
  return result;
}

}  // namespace kjit
