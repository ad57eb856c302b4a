#include "tools/profile/metric_session.hpp"

#include <kjit/error.hpp>

#include <fmt/format.h>

#include <utility>

namespace kjit::profile {

std::string counters_refused(CUptiResult status, std::string_view call, std::string_view cupti_text) {
  const std::string what = fmt::format("{}: {}{}", call, cupti_result_name(status),
                                       cupti_text.empty() || cupti_text == cupti_result_name(status)
                                           ? std::string()
                                           : fmt::format(" ({})", cupti_text));
  const std::string rest = "; the program ran on unmeasured and its timings are recorded";
  switch (status) {
  case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
  case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
    return fmt::format("hardware counters refused ({}): the NVIDIA driver lets only administrators read GPU "
                       "performance counters. Fix: load the driver with NVreg_RestrictProfilingToAdminUsers=0 "
                       "(echo 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' > "
                       "/etc/modprobe.d/nvidia-profiling.conf, then reboot), or run as root or with CAP_SYS_ADMIN "
                       "(in a container: --cap-add SYS_ADMIN, or CAP_PERFMON where the kernel has it){}",
                       what, rest);
  case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
  case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
    return fmt::format("hardware counters refused ({}): another profiler (Nsight Compute, Nsight Systems or a "
                       "CUPTI client in the program) holds the GPU's counters. Fix: run without it{}",
                       what, rest);
  case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    return fmt::format("hardware counters refused ({}): CUPTI reads no counters on a MIG instance. Fix: profile "
                       "on a whole GPU{}", what, rest);
  case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
  case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
  case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
  case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
  case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
  case CUPTI_ERROR_NOT_SUPPORTED:
    return fmt::format("hardware counters refused ({}): this GPU or its setting (virtual GPU, confidential "
                       "computing, a mining part, WSL, a GPU older than Turing) offers no counters to CUPTI{}",
                       what, rest);
  default:
    return fmt::format("hardware counters failed ({}){}", what, rest);
  }
}

LaunchFilter::LaunchFilter(const MetricFilter& filter) : m_filter(filter) {
  if (m_filter.kernel.empty()) return;
  try {
    m_regex.emplace(m_filter.kernel, std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error& e) {
    throw UsageError(fmt::format("the kernel filter \"{}\" is not a regular expression (ECMAScript): {}",
                                 m_filter.kernel, e.what()));
  }
}

bool LaunchFilter::pick(const char* kernel) {
  if (kernel == nullptr) return false;  // graph launches and the like: no single kernel to measure
  bool match = true;
  if (m_regex) {
    auto [it, inserted] = m_matches.try_emplace(kernel, false);
    if (inserted) {
      it->second = std::regex_search(it->first, *m_regex) || std::regex_search(short_kernel_name(it->first), *m_regex);
    }
    match = it->second;
  }
  if (!match) return false;
  ++m_matched;
  if (m_matched <= m_filter.launch_skip) return false;
  if (m_filter.launch_count != 0 && m_measured >= m_filter.launch_count) return false;
  ++m_measured;
  return true;
}

namespace {
thread_local bool t_measuring = false;  // this thread holds the session's mutex for a measured launch
}  // namespace

MetricSession::MetricSession(const CuptiApi& api, MetricRequest request, const MetricFilter& filter)
    : m_api(api), m_request(std::move(request)), m_filter(filter) {
  m_out.names = m_request.names;
  m_out.counters = m_request.counters;
  m_out.sol = m_request.sol;
  if (!m_api.metrics_missing.empty()) {
    fail(fmt::format("hardware counters need CUPTI's range profiler (CUDA 12.6 or newer); CUPTI {} lacks {}",
                     m_api.library, m_api.metrics_missing));
  }
}

MetricSession::~MetricSession() = default;

void MetricSession::fail(std::string message) {
  if (m_out.message.empty()) m_out.message = std::move(message);
  m_off = true;
}

MetricSession::Context* MetricSession::context_for(CUcontext context) {
  if (auto it = m_contexts.find(context); it != m_contexts.end()) {
    return it->second.profiler != nullptr ? &it->second : nullptr;
  }
  Context& c = m_contexts[context];  // a failure below leaves it without a profiler
  CUptiResult r = CUPTI_SUCCESS;
  if ((r = initialize_profiler(m_api)) != CUPTI_SUCCESS) {
    fail(counters_refused(r, "cuptiProfilerInitialize", m_api.describe(r)));
    return nullptr;
  }
  std::uint32_t device = 0;
  if ((r = m_api.device_id(context, &device)) != CUPTI_SUCCESS) {
    fail(counters_refused(r, "cuptiGetDeviceId", m_api.describe(r)));
    return nullptr;
  }
  CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  chip.deviceIndex = device;
  if ((r = m_api.chip_name(&chip)) != CUPTI_SUCCESS || chip.pChipName == nullptr) {
    fail(counters_refused(r, "cuptiDeviceGetChipName", m_api.describe(r)));
    return nullptr;
  }
  CUpti_Profiler_GetCounterAvailability_Params available{CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
  available.ctx = context;
  std::vector<std::uint8_t> availability;
  if ((r = m_api.counter_availability(&available)) != CUPTI_SUCCESS) {
    fail(counters_refused(r, "cuptiProfilerGetCounterAvailability", m_api.describe(r)));
    return nullptr;
  }
  availability.resize(available.counterAvailabilityImageSize);
  available.pCounterAvailabilityImage = availability.data();
  if ((r = m_api.counter_availability(&available)) != CUPTI_SUCCESS) {
    fail(counters_refused(r, "cuptiProfilerGetCounterAvailability", m_api.describe(r)));
    return nullptr;
  }
  try {
    c.config = MetricConfig::get(m_api, chip.pChipName, m_request.counters, availability);
  } catch (const std::exception& e) {
    fail(fmt::format("hardware counters not read: {}; the program ran on unmeasured", e.what()));
    return nullptr;
  }
  m_out.passes = c.config->passes();

  CUpti_RangeProfiler_Enable_Params enable{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
  enable.ctx = context;
  if ((r = m_api.range_enable(&enable)) != CUPTI_SUCCESS) {
    fail(counters_refused(r, "cuptiRangeProfilerEnable", m_api.describe(r)));
    return nullptr;
  }
  c.profiler = enable.pRangeProfilerObject;
  std::vector<const char*> names;
  for (const auto& n : c.config->counters()) names.push_back(n.c_str());
  CUpti_RangeProfiler_GetCounterDataSize_Params size{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
  size.pRangeProfilerObject = c.profiler;
  size.pMetricNames = names.data();
  size.numMetrics = names.size();
  size.maxNumOfRanges = 1;  // one launch, decoded at once
  size.maxNumRangeTreeNodes = 1;
  if ((r = m_api.range_counter_data_size(&size)) != CUPTI_SUCCESS) {
    fail(counters_refused(r, "cuptiRangeProfilerGetCounterDataSize", m_api.describe(r)));
    disable(c);
    return nullptr;
  }
  c.counter_data.assign(size.counterDataSize, 0);
  if (!set_config(c)) {
    disable(c);
    return nullptr;
  }
  return &c;
}

// The counter-data image (re)initialized and the configuration set: before the first measured
// launch and after each one is decoded.
bool MetricSession::set_config(Context& c) {
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params init{
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  init.pRangeProfilerObject = c.profiler;
  init.counterDataSize = c.counter_data.size();
  init.pCounterData = c.counter_data.data();
  CUptiResult r = m_api.range_counter_data_initialize(&init);
  if (r != CUPTI_SUCCESS) {
    fail(counters_refused(r, "cuptiRangeProfilerCounterDataImageInitialize", m_api.describe(r)));
    return false;
  }
  CUpti_RangeProfiler_SetConfig_Params set{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
  set.pRangeProfilerObject = c.profiler;
  set.configSize = c.config->image().size();
  set.pConfig = c.config->image().data();
  set.counterDataImageSize = c.counter_data.size();
  set.pCounterDataImage = c.counter_data.data();
  set.range = CUPTI_AutoRange;
  set.replayMode = CUPTI_KernelReplay;
  set.maxRangesPerPass = 1;
  set.numNestingLevels = 1;
  set.minNestingLevel = 1;
  set.passIndex = 0;
  set.targetNestingLevel = 1;
  if ((r = m_api.range_set_config(&set)) != CUPTI_SUCCESS) {
    fail(counters_refused(r, "cuptiRangeProfilerSetConfig", m_api.describe(r)));
    return false;
  }
  return true;
}

void MetricSession::disable(Context& c) {
  if (c.profiler == nullptr) return;
  CUpti_RangeProfiler_Disable_Params p{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
  p.pRangeProfilerObject = c.profiler;
  m_api.range_disable(&p);
  c.profiler = nullptr;
}

void MetricSession::enter(const CUpti_CallbackData& call) {
  std::unique_lock lock(m_mutex);
  if (m_off || !m_filter.pick(call.symbolName)) return;
  Context* c = context_for(call.context);
  if (c == nullptr) return;
  CUpti_RangeProfiler_Start_Params start{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
  start.pRangeProfilerObject = c->profiler;
  const CUptiResult r = m_api.range_start(&start);
  if (r != CUPTI_SUCCESS) {
    fail(counters_refused(r, "cuptiRangeProfilerStart", m_api.describe(r)));
    return;
  }
  t_measuring = true;
  lock.release();  // held until this launch's exit
}

void MetricSession::exit(const CUpti_CallbackData& call) {
  if (!t_measuring) return;
  t_measuring = false;
  std::unique_lock lock(m_mutex, std::adopt_lock);
  auto it = m_contexts.find(call.context);
  if (it == m_contexts.end() || it->second.profiler == nullptr) return;
  Context& c = it->second;
  CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
  stop.pRangeProfilerObject = c.profiler;
  CUptiResult r = m_api.range_stop(&stop);
  if (r != CUPTI_SUCCESS) {
    fail(counters_refused(r, "cuptiRangeProfilerStop", m_api.describe(r)));
    return;
  }
  CUpti_RangeProfiler_DecodeData_Params decode{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
  decode.pRangeProfilerObject = c.profiler;
  if ((r = m_api.range_decode(&decode)) != CUPTI_SUCCESS) {
    fail(counters_refused(r, "cuptiRangeProfilerDecodeData", m_api.describe(r)));
    return;
  }
  CUpti_RangeProfiler_GetCounterDataInfo_Params info{CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
  info.pCounterDataImage = c.counter_data.data();
  info.counterDataImageSize = c.counter_data.size();
  if ((r = m_api.range_counter_data_info(&info)) != CUPTI_SUCCESS) {
    fail(counters_refused(r, "cuptiRangeProfilerGetCounterDataInfo", m_api.describe(r)));
    return;
  }
  if (info.numTotalRanges > 0) {
    MetricSample sample;
    sample.correlation = call.correlationId;
    const std::string why = c.config->evaluate(c.counter_data, info.numTotalRanges - 1, sample.values);
    if (!why.empty()) {
      fail(fmt::format("hardware counters failed ({}); the program ran on unmeasured", why));
      return;
    }
    m_out.samples.push_back(std::move(sample));
  }
  set_config(c);
}

void MetricSession::context_destroyed(CUcontext context) {
  std::lock_guard lock(m_mutex);
  if (auto it = m_contexts.find(context); it != m_contexts.end()) {
    disable(it->second);
    m_contexts.erase(it);
  }
}

MetricRecording MetricSession::finish() {
  std::lock_guard lock(m_mutex);
  for (auto& [context, c] : m_contexts) disable(c);
  m_contexts.clear();
  m_off = true;
  return std::move(m_out);
}

}  // namespace kjit::profile
