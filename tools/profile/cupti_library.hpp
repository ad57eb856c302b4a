// kjit::profile::cupti: libcupti, opened with dlopen on the first Profiler (never linked, so
// that kjit builds and runs without it). Tried in order: $KJIT_CUPTI_LIBRARY (a file), the
// soname, beside the libnvrtc this process loaded, the toolkit's lib64 and extras/CUPTI/lib64,
// then the CUPTI kjit was built with. The range profiler and the profiler host API (hardware
// counters, CUPTI 12.6+) are a second table of the same library: a CUPTI without them still
// traces, and `metrics_missing` says what it lacks.
#pragma once

#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <string>

namespace kjit::profile {

struct CuptiApi {
  decltype(&cuptiSubscribe) subscribe = nullptr;
  decltype(&cuptiUnsubscribe) unsubscribe = nullptr;
  decltype(&cuptiEnableCallback) enable_callback = nullptr;
  decltype(&cuptiActivityEnable) activity_enable = nullptr;
  decltype(&cuptiActivityDisable) activity_disable = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) dropped_records = nullptr;
  decltype(&cuptiGetTimestamp) timestamp = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
  decltype(&cuptiGetDeviceId) device_id = nullptr;

  // Hardware counters (profile/metric_config, profile/metric_session).
  decltype(&cuptiProfilerInitialize) profiler_initialize = nullptr;
  decltype(&cuptiDeviceGetChipName) chip_name = nullptr;
  decltype(&cuptiProfilerGetCounterAvailability) counter_availability = nullptr;
  decltype(&cuptiProfilerHostInitialize) host_initialize = nullptr;
  decltype(&cuptiProfilerHostDeinitialize) host_deinitialize = nullptr;
  decltype(&cuptiProfilerHostGetSupportedChips) host_supported_chips = nullptr;
  decltype(&cuptiProfilerHostGetBaseMetrics) host_base_metrics = nullptr;
  decltype(&cuptiProfilerHostGetSubMetrics) host_sub_metrics = nullptr;
  decltype(&cuptiProfilerHostGetMetricProperties) host_metric_properties = nullptr;
  decltype(&cuptiProfilerHostConfigAddMetrics) host_add_metrics = nullptr;
  decltype(&cuptiProfilerHostGetConfigImageSize) host_config_image_size = nullptr;
  decltype(&cuptiProfilerHostGetConfigImage) host_config_image = nullptr;
  decltype(&cuptiProfilerHostGetNumOfPasses) host_passes = nullptr;
  decltype(&cuptiProfilerHostEvaluateToGpuValues) host_evaluate = nullptr;
  decltype(&cuptiRangeProfilerEnable) range_enable = nullptr;
  decltype(&cuptiRangeProfilerDisable) range_disable = nullptr;
  decltype(&cuptiRangeProfilerGetCounterDataSize) range_counter_data_size = nullptr;
  decltype(&cuptiRangeProfilerCounterDataImageInitialize) range_counter_data_initialize = nullptr;
  decltype(&cuptiRangeProfilerSetConfig) range_set_config = nullptr;
  decltype(&cuptiRangeProfilerStart) range_start = nullptr;
  decltype(&cuptiRangeProfilerStop) range_stop = nullptr;
  decltype(&cuptiRangeProfilerDecodeData) range_decode = nullptr;
  decltype(&cuptiRangeProfilerGetCounterDataInfo) range_counter_data_info = nullptr;

  std::string library;          // the file that was opened
  std::string metrics_missing;  // the counter functions this CUPTI lacks; empty: it has them all

  // "CUPTI_ERROR_X (text)" for a result.
  std::string describe(CUptiResult result) const;
};

// cuptiProfilerInitialize, once per process (the range profiler and cuptiDeviceGetChipName need
// it first; without it the latter crashes): CUPTI_SUCCESS, or what it returned.
CUptiResult initialize_profiler(const CuptiApi& api);

// "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES": a result's enumerator name, with no library loaded.
std::string cupti_result_name(CUptiResult result);

// The loaded CUPTI, or nullptr and why (never throws). Loaded once per process.
const CuptiApi* cupti(std::string* why);

}  // namespace kjit::profile
