// kjit profile: run a program under kjit's profiler (kjit::profile_program) and print its table
// of kernels, copies and phases, or the same as JSON; --trace writes a Chrome trace.
#include "commands.hpp"

#include <kjit/tools/profile.hpp>
#include <kjit/tools/write_file.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>

namespace kjit::cli {
namespace {

struct ProfileArgs {
  bool table = false;
  std::string trace;
  std::string output;
  std::string sort_by = "gpu_total";
  std::size_t limit = 0;
  bool by_shape = false;
  bool no_phases = false;
  std::size_t name_width = 70;
  std::size_t max_events = 2'000'000;
  std::vector<std::string> metrics;
  std::string kernel;
  std::uint64_t launch_count = 0;
  std::uint64_t launch_skip = 0;
};

std::string report(const ProfiledRun& run, const TableOptions& table, bool json) {
  if (json) {
    nlohmann::ordered_json j;
    j["exit_code"] = run.exit_code;
    j["processes"] = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < run.pids.size(); ++i) {
      auto s = nlohmann::ordered_json::parse(to_json(run.summaries[i]));
      j["processes"].push_back({{"pid", run.pids[i]}, {"summary", std::move(s)}});
    }
    j["traces"] = nlohmann::ordered_json::array();
    for (const auto& t : run.traces) j["traces"].push_back(t.string());
    if (!run.message.empty()) j["message"] = run.message;
    return json_text(j, 2) + "\n";
  }
  std::string out;  // the tables: data (the notices go to stderr: print_notices)
  for (std::size_t i = 0; i < run.pids.size(); ++i) {
    out += fmt::format("\nkjit profile: process {}{}\n", run.pids[i], i == 0 ? " (the program)" : "");
    out += format_table(run.summaries[i], table);
  }
  return out;
}

// Why there is no profile (or no counters), and where the traces went: diagnostics, on stderr.
void print_notices(const ProfiledRun& run) {
  if (!run.message.empty()) fmt::print(stderr, "kjit profile: {}\n", run.message);
  for (std::size_t i = 0; i < run.summaries.size(); ++i) {
    if (!run.summaries[i].metric_message.empty()) {
      fmt::print(stderr, "kjit profile: process {}: {}\n", run.pids[i], run.summaries[i].metric_message);
    }
  }
  for (const auto& t : run.traces) {
    fmt::print(stderr, "kjit profile: Chrome trace in {} (open it in https://ui.perfetto.dev or chrome://tracing)\n",
               t.string());
  }
}

}  // namespace

void add_profile_command(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<ProfileArgs>();
  auto* profile = app.add_subcommand(
      "profile",
      "Run a program under kjit's profiler (CUPTI, through CUDA's injection: the program need not link kjit) and "
      "print where its GPU time went: kjit profile [options] -- PROGRAM ARGS...");
  profile->add_flag("--table", args->table, "Print the table of kernels, copies and host phases (the default)");
  profile->add_option("--trace", args->trace, "Write a Chrome trace (Perfetto, chrome://tracing) to this file");
  profile->add_option("-o,--output", args->output, "Write the table (or the JSON) to this file, not stdout");
  profile->add_option("--sort", args->sort_by, "Sort the kernels by gpu_total, gpu_mean, gpu_min, gpu_max, calls, "
                                               "host_total or name")
      ->capture_default_str();
  profile->add_option("--limit", args->limit, "Show at most this many kernels (0: all)")->capture_default_str();
  profile->add_flag("--by-shape", args->by_shape, "One row per kernel and launch shape");
  profile->add_option("--name-width", args->name_width, "Longer kernel names end in ... in the table (0: whole)")
      ->capture_default_str();
  profile->add_flag("--no-phases", args->no_phases, "Leave out the table of host phases");
  profile->add_option("--max-events", args->max_events,
                      "Records kept per kind; past it the oldest are dropped and counted")
      ->capture_default_str();
  profile->add_option("--metrics", args->metrics,
                      "Read hardware counters of the launches picked: sol (Nsight Compute's speed of light: "
                      "duration, compute, memory and DRAM throughput, occupancy, registers, grid, block) or metric "
                      "names in ncu's spelling, comma-separated; each picked launch is serialized and replayed")
      ->delimiter(',');
  profile->add_option("-k,--kernel", args->kernel,
                      "With --metrics: measure only kernels whose name matches this regex (ncu -k regex:)");
  profile->add_option("-c,--launch-count", args->launch_count,
                      "With --metrics: measure at most this many matching launches (0: all)")
      ->capture_default_str();
  profile->add_option("-s,--launch-skip", args->launch_skip,
                      "With --metrics: skip this many matching launches first")
      ->capture_default_str();
  profile->footer("The program's output and exit code pass through (128+N when signal N ended it); the report "
                  "follows its output on stdout, kjit's notices (no profile and why, where a trace went) go to "
                  "stderr. Exit code 2 when the program cannot be started.");
  profile->callback([&ctx, args] {
    if (ctx.nvrtc_flags.empty()) throw UsageError("no program given: kjit profile [options] -- PROGRAM ARGS...");
    ProfileRunOptions options;
    options.trace = args->trace;
    options.table.sort_by = args->sort_by;
    options.table.limit = args->limit;
    options.table.by_shape = args->by_shape;
    options.table.phases = !args->no_phases;
    options.table.name_width = args->name_width;
    options.max_events = args->max_events;
    if (args->metrics.empty() && (!args->kernel.empty() || args->launch_count != 0 || args->launch_skip != 0)) {
      throw UsageError("--kernel, --launch-count and --launch-skip pick launches to measure: give --metrics too");
    }
    options.metrics = args->metrics;
    options.metric_filter.kernel = args->kernel;
    options.metric_filter.launch_count = args->launch_count;
    options.metric_filter.launch_skip = args->launch_skip;
    const ProfiledRun run = profile_program(ctx.nvrtc_flags, options);
    const std::string text = report(run, options.table, ctx.json);
    if (!ctx.json) print_notices(run);  // with --json the message is in the document
    if (args->output.empty()) {
      std::fflush(stdout);
      fmt::print("{}", text);
    } else {
      write_file_atomically(args->output, text);
    }
    ctx.exit_code = run.exit_code;
  });
}

}  // namespace kjit::cli
