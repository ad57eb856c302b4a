// kjit::Profiler: where a program's GPU time goes. A scope around any code that records, through
// CUPTI (NVIDIA's profiling interface, loaded on first use), every kernel, memcpy and memset on
// the GPU (also those other libraries launch), the host call that launched each kernel, kjit's
// own phases (request hashing, registry hit, disk or remote hit, compile and NVRTC's share, load)
// and the caller's own ranges. Then a table like torch.profiler's key_averages() (text or data)
// and a Chrome trace for Perfetto or chrome://tracing.
//
//   kjit::Profiler p;
//   ... launches ...
//   p.stop();
//   std::cout << p.table({.sort_by = "gpu_total", .limit = 20});
//   p.export_chrome_trace("trace.json");
//
// Where it cannot record (no libcupti, no GPU, another profiler such as Nsight already attached)
// it says so once through ProfileOptions::log, active() is false and the program runs unprofiled.
// One Profiler records at a time in a process. Without an open Profiler, launches pay nothing.
//
// With ProfileOptions::metrics ("sol", or metric names in Nsight Compute's spelling) it also reads
// the GPU's hardware counters for the launches MetricFilter picks, through CUPTI's range profiler:
// each such launch is serialized and replayed once per pass (CUPTI saves and restores the device
// memory it writes), the others run as usual. The table then shows Nsight Compute's
// speed-of-light figures per kernel:
//
//   kjit::Profiler p({.metrics = {"sol"}});        // or {"dram__bytes_read.sum", ...}
//   ... launches ...
//   std::cout << p.table();                        // Duration, Compute Throughput %, DRAM %, ...
#pragma once

#include <kjit/export.hpp>
#include <kjit/log.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kjit {

// Which launches a Profiler with metrics measures, as Nsight Compute's -k, -s and -c: those whose
// kernel name matches `kernel`, past the first `launch_skip` of them, at most `launch_count`.
struct MetricFilter {
  std::string kernel;             // an ECMAScript regex searched in the kernel's name (demangled or not); empty: all
  std::uint64_t launch_count = 0;  // 0: every matching launch
  std::uint64_t launch_skip = 0;
};

struct ProfileOptions {
  // GPU records (kernels, copies, sets) and launch calls kept; past it the oldest are dropped
  // and counted (ProfileSummary::dropped), so a long run never grows without end.
  std::size_t max_events = 2'000'000;
  bool memory = true;  // memcpy and memset records besides kernels
  // Where the one message about a profiler that cannot record goes; empty: the library's default
  // log, as a Runtime's without RuntimeConfig::log (stderr, "kjit: warn: ...", unless KJIT_LOG=error).
  LogCallback log;
  // Hardware counters: "sol" (Nsight Compute's speed-of-light set) and/or metric names such as
  // "dram__throughput.avg.pct_of_peak_sustained_elapsed" (an entry may list several, comma-separated);
  // launch__* names (launch__registers_per_thread, launch__grid_size, launch__block_size,
  // launch__shared_mem_per_block_static, ...) come from the launch itself. Empty: no counters.
  // An unknown name is a UsageError from the constructor when a GPU is there to check it against.
  std::vector<std::string> metrics;
  MetricFilter metric_filter;
  // Check the metric names against device 0 in the constructor (a UsageError there). false: at the
  // first measured launch, as a message (CUDA's injection opens its Profiler inside cuInit, where
  // the driver cannot be asked yet).
  bool check_metrics_at_start = true;
};

struct TableOptions {
  // gpu_total, gpu_mean, gpu_min, gpu_max, calls, host_total or name.
  std::string sort_by = "gpu_total";
  std::size_t limit = 0;   // rows shown; 0: all
  bool by_shape = false;   // one row per kernel and launch shape (grid, block, shared memory)
  bool phases = true;      // the table of kjit's phases below the kernels
  std::size_t name_width = 70;  // longer names end in "..." in the text table (0: whole); data keeps them whole
};

// One metric of a kernel row: over its measured launches.
struct ProfileMetric {
  std::string name;  // the full name ("dram__throughput.avg.pct_of_peak_sustained_elapsed")
  double mean = 0, min = 0, max = 0;
};

struct ProfileKernelRow {
  std::string name;     // the name expression kjit compiled it by, else the demangled name without parameters
  std::string shape;    // "grid (x,y,z) block (x,y,z) smem N" with by_shape; empty otherwise
  std::string program;  // the kjit program it came from; empty for kernels kjit did not load
  std::uint64_t calls = 0;
  double gpu_total_us = 0, gpu_mean_us = 0, gpu_min_us = 0, gpu_max_us = 0;
  double gpu_percent = 0;         // of all kernels' GPU time
  double host_enqueue_total_us = 0;  // the launch calls' time on the host
  std::uint64_t measured = 0;        // launches measured with hardware counters
  std::vector<ProfileMetric> metrics;  // ProfileSummary::metric_names order; empty when none was measured
};

struct ProfileTransferRow {
  std::string kind;  // "memcpy HtoD", "memcpy DtoH", "memcpy DtoD", ..., "memset"
  std::uint64_t calls = 0;
  std::uint64_t bytes = 0;
  double gpu_total_us = 0;
};

struct ProfilePhaseRow {
  std::string phase;  // request hash, registry hit, disk hit, remote hit, compile, nvrtc, link, load, wait, launch enqueue, or a user range
  std::uint64_t count = 0;
  double total_us = 0, mean_us = 0, max_us = 0;
};

struct ProfileSummary {
  bool recorded = false;  // false: nothing was recorded; `message` says why
  std::string message;
  std::vector<ProfileKernelRow> kernels;     // sorted and limited as asked
  std::vector<ProfileTransferRow> transfers;
  std::vector<ProfilePhaseRow> phases;       // kjit's phases, then user ranges
  std::uint64_t kernel_count = 0;            // every kernel record, also rows past the limit
  std::size_t kernel_names = 0;              // rows before the limit
  double gpu_kernel_total_us = 0;
  double wall_us = 0;                        // from the profiler's start to its stop
  std::uint64_t dropped = 0;                 // records dropped (oldest first, or by CUPTI)
  // Hardware counters (ProfileOptions::metrics); empty names: none asked.
  std::vector<std::string> metric_names;     // "sol" expanded
  bool metric_sol = false;                   // the set "sol" was asked: the table titles its columns as ncu does
  std::size_t metric_passes = 0;             // replays of each measured launch
  std::uint64_t measured_launches = 0;
  std::string metric_message;                // why counters were not (all) read; empty when they were
};

// Metric names checked for a chip through CUPTI's profiler host API: its config image and pass
// count (what each measured launch costs), with no GPU needed for a named chip.
struct MetricPlan {
  std::string chip;                   // "GH100"
  std::vector<std::string> names;     // "sol" expanded, each once, in order
  std::vector<std::string> counters;  // read from hardware counters (the others are launch__ figures)
  std::size_t passes = 0;
};
// `chip` empty: device 0's (needs the driver). Throws UsageError for an unknown name (listing the
// closest valid ones) or chip, UnavailableError when CUPTI or its host API is not there.
KJIT_API MetricPlan plan_metrics(const std::vector<std::string>& metrics, const std::string& chip = "");

// The table as text, the same one Profiler::table gives (for a summary read back as JSON).
KJIT_API std::string format_table(const ProfileSummary& summary, const TableOptions& options = {});
KJIT_API std::string to_json(const ProfileSummary& summary);
// Throws UsageError for text that is not a summary to_json wrote.
KJIT_API ProfileSummary profile_summary_from_json(std::string_view json);

class KJIT_API Profiler {
public:
  Profiler();
  explicit Profiler(ProfileOptions options);
  ~Profiler();  // stops
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  bool active() const;                 // recording now, or recorded until stop()
  const std::string& message() const;  // why not, when !active()

  // Ends the recording: every GPU record is flushed first (waits for nothing on the GPU:
  // synchronize before stop() to see kernels still running). Later calls do nothing.
  void stop();

  // Stop first (a call before stop() stops).
  ProfileSummary summary(const TableOptions& options = {});
  std::string table(const TableOptions& options = {});
  std::string chrome_trace();
  // Throws IoError when the file cannot be written.
  void export_chrome_trace(const std::filesystem::path& path);

  // A host range of the caller's own ("decode"), recorded while a Profiler records, and an NVTX
  // range in domain "kjit" when Nsight attaches. Costs a branch otherwise.
  class KJIT_API Range {
  public:
    explicit Range(std::string_view name);
    ~Range();
    Range(const Range&) = delete;
    Range& operator=(const Range&) = delete;

  private:
    std::string m_name;
    std::uint64_t m_start = 0;
    bool m_nvtx = false;
  };
  static Range range(std::string_view name) { return Range(name); }

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

// `kjit profile`: runs a program (argv[0] found on PATH) under the profiler through CUDA's
// injection (CUDA_INJECTION64_PATH names libkjit_inject, installed beside libkjit), so that a
// program that never linked kjit is profiled too. Its output passes through; it is waited for.
struct ProfileRunOptions {
  std::filesystem::path trace;  // a Chrome trace here when not empty (other processes: <stem>.<pid>.json)
  TableOptions table;           // applied to the summaries
  std::size_t max_events = 2'000'000;
  std::vector<std::string> metrics;  // as ProfileOptions::metrics; checked against device 0 before the program runs
  MetricFilter metric_filter;
};

struct ProfiledRun {
  int exit_code = 0;        // the program's; 128 + N when signal N ended it
  std::vector<int> pids;    // processes that recorded, the program first
  std::vector<ProfileSummary> summaries;  // one per process in `pids`
  std::vector<std::filesystem::path> traces;
  std::string message;      // non-empty when no process recorded: why
};

// Throws UsageError when the program cannot be started or libkjit_inject is not found.
KJIT_API ProfiledRun profile_program(const std::vector<std::string>& argv, const ProfileRunOptions& options = {});

}  // namespace kjit
