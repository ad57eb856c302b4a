// libkjit_inject: CUDA's injection library for `kjit profile -- PROGRAM`. CUDA loads it when
// CUDA_INJECTION64_PATH names it and calls InitializeInjection from the program's cuInit; it
// opens a kjit::Profiler for the rest of the process and, at exit, writes the summary (and the
// Chrome trace when asked; hardware counters per $KJIT_PROFILE_METRICS, _KERNEL, _LAUNCH_COUNT,
// _LAUNCH_SKIP) into $KJIT_PROFILE_OUT as <pid>.summary.json and <pid>.trace.json
// for kjit::profile_program to read. A program that links kjit shares this libkjit, so its
// phases show too. Nothing is printed here.
#include <kjit/tools/profile.hpp>
#include <kjit/tools/write_file.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

kjit::Profiler* g_profiler = nullptr;

std::string env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

void write_profile() {
  if (g_profiler == nullptr) return;
  const std::string folder = env("KJIT_PROFILE_OUT", "");
  if (folder.empty()) return;
  const std::string stem = folder + "/" + std::to_string(::getpid());
  try {
    kjit::TableOptions table;
    table.sort_by = env("KJIT_PROFILE_SORT", "gpu_total");
    table.limit = std::strtoull(env("KJIT_PROFILE_LIMIT", "0").c_str(), nullptr, 10);
    table.by_shape = env("KJIT_PROFILE_BY_SHAPE", "0") == "1";
    table.phases = env("KJIT_PROFILE_PHASES", "1") == "1";
    kjit::ProfileSummary summary;
    try {
      summary = g_profiler->summary(table);
    } catch (const std::exception& e) {  // a sort key the summary refuses
      summary.message = e.what();
    }
    if (env("KJIT_PROFILE_TRACE", "0") == "1" && g_profiler->active()) {
      try {
        g_profiler->export_chrome_trace(stem + ".trace.json");
      } catch (const std::exception&) {  // the summary still goes; kjit profile finds no trace
      }
    }
    // The summary last: profile_program looks for a process's trace once its summary is there.
    kjit::write_file_atomically(stem + ".summary.json", kjit::to_json(summary));
  } catch (...) {
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  if (g_profiler != nullptr) return 1;
  kjit::ProfileOptions options;
  options.max_events = std::strtoull(env("KJIT_PROFILE_MAX_EVENTS", "2000000").c_str(), nullptr, 10);
  options.log = [](kjit::LogLevel, std::string_view) {};  // `kjit profile` reports the reason itself
  // Hardware counters: names checked by `kjit profile` already, and against the device at the
  // first measured launch (the driver cannot be asked from inside cuInit).
  const std::string metrics = env("KJIT_PROFILE_METRICS", "");
  if (!metrics.empty()) {
    options.metrics = {metrics};
    options.metric_filter.kernel = env("KJIT_PROFILE_KERNEL", "");
    options.metric_filter.launch_count = std::strtoull(env("KJIT_PROFILE_LAUNCH_COUNT", "0").c_str(), nullptr, 10);
    options.metric_filter.launch_skip = std::strtoull(env("KJIT_PROFILE_LAUNCH_SKIP", "0").c_str(), nullptr, 10);
    options.check_metrics_at_start = false;
  }
  try {
    g_profiler = new kjit::Profiler(options);  // never destroyed: it lives until the process ends
  } catch (const std::exception&) {             // metrics it cannot take: timings alone
    options.metrics.clear();
    g_profiler = new kjit::Profiler(options);
  }
  std::atexit(write_profile);
  return 1;
}
