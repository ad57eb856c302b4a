#include "tools/profile/cupti_library.hpp"

#include "core/spi/base.hpp"

#include <fmt/format.h>

#include <cuda.h>

#include <cstdlib>
#include <mutex>
#include <type_traits>
#include <vector>

namespace kjit::profile {
namespace {

struct Loaded {
  CuptiApi api;
  std::string error;
};

Loaded load() {
  Loaded out;
  const std::string soname = fmt::format("libcupti.so.{}", CUDA_VERSION / 1000);
  std::vector<std::string> tried;
  if (auto chosen = base::env_text(base::Env::cupti_library)) {
    tried.push_back(*chosen);  // the user's choice, and only it
  } else {
    tried = base::toolkit_library_candidates(soname, {"lib64", "extras/CUPTI/lib64"});
#ifdef KJIT_CUPTI_BUILD_LIBRARY
    tried.push_back(KJIT_CUPTI_BUILD_LIBRARY);
#endif
  }
  base::DynamicLibrary lib = base::DynamicLibrary::open_first(tried);
  if (!lib) {
    out.error = fmt::format("CUPTI (libcupti, the CUDA toolkit's profiling library) could not be loaded: {}; "
                            "install the toolkit's CUPTI, put it on LD_LIBRARY_PATH or name it in KJIT_CUPTI_LIBRARY",
                            lib.why());
    return out;
  }
  out.api.library = lib.file();
  auto resolve = [&](auto& fn, const char* name) { lib.resolve(fn, name); };
  CuptiApi& a = out.api;
  resolve(a.subscribe, "cuptiSubscribe");
  resolve(a.unsubscribe, "cuptiUnsubscribe");
  resolve(a.enable_callback, "cuptiEnableCallback");
  resolve(a.activity_enable, "cuptiActivityEnable");
  resolve(a.activity_disable, "cuptiActivityDisable");
  resolve(a.register_callbacks, "cuptiActivityRegisterCallbacks");
  resolve(a.flush_all, "cuptiActivityFlushAll");
  resolve(a.next_record, "cuptiActivityGetNextRecord");
  resolve(a.dropped_records, "cuptiActivityGetNumDroppedRecords");
  resolve(a.timestamp, "cuptiGetTimestamp");
  resolve(a.result_string, "cuptiGetResultString");
  resolve(a.device_id, "cuptiGetDeviceId");
  if (!lib.missing().empty()) {
    out.error = fmt::format("CUPTI {} lacks {}", a.library, lib.missing());
    return out;
  }
  resolve(a.profiler_initialize, "cuptiProfilerInitialize");
  resolve(a.chip_name, "cuptiDeviceGetChipName");
  resolve(a.counter_availability, "cuptiProfilerGetCounterAvailability");
  resolve(a.host_initialize, "cuptiProfilerHostInitialize");
  resolve(a.host_deinitialize, "cuptiProfilerHostDeinitialize");
  resolve(a.host_supported_chips, "cuptiProfilerHostGetSupportedChips");
  resolve(a.host_base_metrics, "cuptiProfilerHostGetBaseMetrics");
  resolve(a.host_sub_metrics, "cuptiProfilerHostGetSubMetrics");
  resolve(a.host_metric_properties, "cuptiProfilerHostGetMetricProperties");
  resolve(a.host_add_metrics, "cuptiProfilerHostConfigAddMetrics");
  resolve(a.host_config_image_size, "cuptiProfilerHostGetConfigImageSize");
  resolve(a.host_config_image, "cuptiProfilerHostGetConfigImage");
  resolve(a.host_passes, "cuptiProfilerHostGetNumOfPasses");
  resolve(a.host_evaluate, "cuptiProfilerHostEvaluateToGpuValues");
  resolve(a.range_enable, "cuptiRangeProfilerEnable");
  resolve(a.range_disable, "cuptiRangeProfilerDisable");
  resolve(a.range_counter_data_size, "cuptiRangeProfilerGetCounterDataSize");
  resolve(a.range_counter_data_initialize, "cuptiRangeProfilerCounterDataImageInitialize");
  resolve(a.range_set_config, "cuptiRangeProfilerSetConfig");
  resolve(a.range_start, "cuptiRangeProfilerStart");
  resolve(a.range_stop, "cuptiRangeProfilerStop");
  resolve(a.range_decode, "cuptiRangeProfilerDecodeData");
  resolve(a.range_counter_data_info, "cuptiRangeProfilerGetCounterDataInfo");
  a.metrics_missing = lib.missing();  // the core resolved whole above: what is missing now is the counters'
  return out;
}

}  // namespace

std::string CuptiApi::describe(CUptiResult result) const {
  const char* text = nullptr;
  if (result_string == nullptr || result_string(result, &text) != CUPTI_SUCCESS || text == nullptr) {
    return fmt::format("CUPTI error {}", static_cast<int>(result));
  }
  return text;
}

CUptiResult initialize_profiler(const CuptiApi& api) {
  static std::mutex mutex;
  static bool done = false;
  std::lock_guard lock(mutex);
  if (done) return CUPTI_SUCCESS;
  if (api.profiler_initialize == nullptr) return CUPTI_ERROR_NOT_SUPPORTED;
  CUpti_Profiler_Initialize_Params p{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  const CUptiResult r = api.profiler_initialize(&p);
  done = r == CUPTI_SUCCESS;
  return r;
}

std::string cupti_result_name(CUptiResult result) {
  switch (result) {
#define KJIT_CUPTI_NAME(x) \
  case x: return #x;
    KJIT_CUPTI_NAME(CUPTI_SUCCESS)
    KJIT_CUPTI_NAME(CUPTI_ERROR_INVALID_PARAMETER)
    KJIT_CUPTI_NAME(CUPTI_ERROR_INVALID_DEVICE)
    KJIT_CUPTI_NAME(CUPTI_ERROR_INVALID_CONTEXT)
    KJIT_CUPTI_NAME(CUPTI_ERROR_NOT_INITIALIZED)
    KJIT_CUPTI_NAME(CUPTI_ERROR_INVALID_METRIC_NAME)
    KJIT_CUPTI_NAME(CUPTI_ERROR_NOT_SUPPORTED)
    KJIT_CUPTI_NAME(CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED)
    KJIT_CUPTI_NAME(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
    KJIT_CUPTI_NAME(CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED)
    KJIT_CUPTI_NAME(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    KJIT_CUPTI_NAME(CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES)
    KJIT_CUPTI_NAME(CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED)
    KJIT_CUPTI_NAME(CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED)
    KJIT_CUPTI_NAME(CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED)
    KJIT_CUPTI_NAME(CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED)
    KJIT_CUPTI_NAME(CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED)
    KJIT_CUPTI_NAME(CUPTI_ERROR_INVALID_CHIP_NAME)
    KJIT_CUPTI_NAME(CUPTI_ERROR_UNKNOWN)
#undef KJIT_CUPTI_NAME
  default: return fmt::format("CUPTI error {}", static_cast<int>(result));
  }
}

const CuptiApi* cupti(std::string* why) {
  // Kept once loaded; a failure is tried again next time (KJIT_CUPTI_LIBRARY may change).
  static std::mutex mutex;
  static const Loaded* loaded = nullptr;
  std::lock_guard lock(mutex);
  if (loaded == nullptr) {
    Loaded attempt = load();
    if (!attempt.error.empty()) {
      if (why != nullptr) *why = attempt.error;
      return nullptr;
    }
    loaded = new Loaded(std::move(attempt));  // never freed: CUPTI stays loaded
  }
  return &loaded->api;
}

}  // namespace kjit::profile
