// kjit::profile::Recording: what a profiling session recorded, as plain data (times in
// nanoseconds on CUPTI's clock). The live collector (profile/collector) fills it; the summary
// (profile/summary) and the Chrome trace (profile/chrome_trace) read it, and the CPU tests build
// one by hand.
#pragma once

#include "core/spi/trace.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace kjit::profile {

struct KernelEvent {
  std::uint64_t start = 0, end = 0;
  std::uint32_t name = 0;  // index into Recording::names
  std::uint32_t device = 0, context = 0, stream = 0;
  std::uint32_t correlation = 0;
  std::int32_t grid[3] = {1, 1, 1};
  std::int32_t block[3] = {1, 1, 1};
  std::uint16_t registers = 0;
  std::int32_t static_shared = 0, dynamic_shared = 0;
};

struct TransferEvent {
  std::uint64_t start = 0, end = 0;
  std::uint64_t bytes = 0;
  std::uint32_t device = 0, context = 0, stream = 0;
  std::uint32_t correlation = 0;
  std::uint8_t kind = 0;  // TransferKind
};

enum class TransferKind : std::uint8_t { htod, dtoh, dtod, htoh, ptop, other_copy, memset };
const char* to_string(TransferKind kind);

// The host call that launched a kernel (cuLaunchKernel, cudaLaunchKernel, ...).
struct LaunchCall {
  std::uint64_t start = 0, end = 0;
  std::uint32_t correlation = 0;
  std::uint32_t thread = 0;  // the OS thread id
  std::uint32_t api = 0;     // index into Recording::names: the call's name
};

// One launch measured with hardware counters: the counters' values, in MetricRecording::counters
// order, keyed by the launch's correlation id (its kernel record's).
struct MetricSample {
  std::uint32_t correlation = 0;
  std::vector<double> values;
};

// What a session with metrics measured (profile/metric_session).
struct MetricRecording {
  std::vector<std::string> names;     // asked, "sol" expanded (counters and launch__ figures), in order
  std::vector<std::string> counters;  // read from hardware counters: the samples' values
  bool sol = false;                   // the set "sol" was asked
  std::size_t passes = 0;             // replays of each measured launch
  std::vector<MetricSample> samples;  // in the order measured
  std::string message;                // why counters were not (all) read; empty when they were
};

using trace::HostRange;
using trace::KnownKernel;
using trace::Phase;
using trace::to_string;

struct Recording {
  std::uint64_t start = 0, stop = 0;  // the session's bounds
  int pid = 0;
  std::vector<std::string> names;    // kernel names (mangled) and API names, interned
  std::vector<KernelEvent> kernels;  // in arrival order
  std::vector<TransferEvent> transfers;
  std::vector<LaunchCall> launches;
  std::vector<HostRange> ranges;
  std::vector<KnownKernel> known;    // kjit's loaded kernels
  std::uint64_t dropped = 0;         // records dropped: the oldest past the bound, and CUPTI's own
  MetricRecording metrics;           // empty names: no metrics asked
};

// "softmax<float, 256>" from "_Z7softmaxIfLi256EEvPKfPfii": demangled, without the return type
// and the parameter list; the name itself when it is not a mangled C++ name.
std::string short_kernel_name(const std::string& mangled);
// The whole demangled signature (or the name itself).
std::string demangle(const std::string& mangled);

}  // namespace kjit::profile
