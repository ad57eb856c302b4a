// kjit::profile::MetricSession: hardware counters while a Profiler records with metrics. The
// collector's launch callbacks call it around each outermost launch call: a launch the filter
// picks (name regex, skip, count, as ncu's -k/-s/-c) is measured by CUPTI's range profiler in
// auto range and kernel replay (CUPTI saves device memory, replays the kernel once per pass and
// restores it; the launch is serialized), then decoded and evaluated at once into a sample keyed
// by the launch's correlation id. Other launches run as they would. The range profiler is enabled
// per context on its first measured launch and disabled when the context goes or the session
// ends. A refusal (no privileges, another profiler, an unsupported device) is said once in
// `message` and ends the measuring; the program and the timings go on. Nothing here throws past
// the constructor (UsageError for a bad regex).
#pragma once

#include <kjit/tools/profile.hpp>

#include "tools/profile/cupti_library.hpp"
#include "tools/profile/metric_config.hpp"
#include "tools/profile/metric_names.hpp"
#include "tools/profile/recording.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <unordered_map>
#include <vector>

namespace kjit::profile {

// Why counters were refused and what fixes it, for a CUPTI status from `call` (pure: the CPU
// tests feed it statuses).
std::string counters_refused(CUptiResult status, std::string_view call, std::string_view cupti_text = {});

// The launch filter: does a kernel of this (mangled) name match `regex` (searched in the mangled
// name and the short demangled one)? Pure.
class LaunchFilter {
public:
  explicit LaunchFilter(const MetricFilter& filter);  // throws UsageError for a bad regex
  // Counts a launch of `kernel` and says whether it is one to measure.
  bool pick(const char* kernel);

private:
  MetricFilter m_filter;
  std::optional<std::regex> m_regex;
  std::unordered_map<std::string, bool> m_matches;  // by mangled name
  std::uint64_t m_matched = 0, m_measured = 0;
};

class MetricSession {
public:
  MetricSession(const CuptiApi& api, MetricRequest request, const MetricFilter& filter);
  ~MetricSession();
  MetricSession(const MetricSession&) = delete;
  MetricSession& operator=(const MetricSession&) = delete;

  // From the outermost launch call's entry and exit callbacks, on the launching thread.
  void enter(const CUpti_CallbackData& call);
  void exit(const CUpti_CallbackData& call);
  // A context is about to go: its range profiler is disabled first.
  void context_destroyed(CUcontext context);
  // Disables what is still enabled and hands over the samples.
  MetricRecording finish();

private:
  struct Context {
    CUpti_RangeProfiler_Object* profiler = nullptr;
    std::shared_ptr<const MetricConfig> config;
    std::vector<std::uint8_t> counter_data;
  };
  Context* context_for(CUcontext context);  // under m_mutex; nullptr when it cannot measure
  bool set_config(Context& c);
  void fail(std::string message);  // the first failure ends the measuring
  void disable(Context& c);

  const CuptiApi& m_api;
  MetricRequest m_request;
  LaunchFilter m_filter;
  std::mutex m_mutex;  // held from a measured launch's entry to its exit (serializes measured launches)
  bool m_off = false;
  std::map<CUcontext, Context> m_contexts;
  MetricRecording m_out;
};

}  // namespace kjit::profile
