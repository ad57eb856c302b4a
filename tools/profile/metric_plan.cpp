// kjit::plan_metrics: metric names checked for a chip through the profiler host API
// (profile/metric_config), "sol" and launch__ names expanded first (profile/metric_names).
#include <kjit/device.hpp>
#include <kjit/error.hpp>
#include <kjit/tools/profile.hpp>

#include "tools/profile/cupti_library.hpp"
#include "tools/profile/metric_config.hpp"
#include "tools/profile/metric_names.hpp"

#include <fmt/format.h>

namespace kjit {

MetricPlan plan_metrics(const std::vector<std::string>& metrics, const std::string& chip) {
  const profile::MetricRequest request = profile::expand_metrics(metrics);
  std::string why;
  const profile::CuptiApi* api = profile::cupti(&why);
  if (api == nullptr) throw UnavailableError(fmt::format("checking metrics: {}", why));
  MetricPlan plan;
  plan.chip = chip;
  if (plan.chip.empty()) {
    if (device_count() == 0) {
      throw UnavailableError(fmt::format("checking metrics against device 0: {}; name a chip (\"GH100\") to check "
                                         "without a GPU",
                                         driver_available() ? "the driver reports no device" : driver_unavailable_reason()));
    }
    if (!api->metrics_missing.empty()) {
      throw UnavailableError(fmt::format("hardware counters need CUPTI's range profiler (CUDA 12.6 or newer); CUPTI {} "
                                         "lacks {}", api->library, api->metrics_missing));
    }
    CUptiResult r = profile::initialize_profiler(*api);
    if (r != CUPTI_SUCCESS) {
      throw UnavailableError(fmt::format("checking metrics: cuptiProfilerInitialize failed: {}", api->describe(r)));
    }
    CUpti_Device_GetChipName_Params p{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    p.deviceIndex = 0;
    r = api->chip_name(&p);
    if (r != CUPTI_SUCCESS || p.pChipName == nullptr) {
      throw UnavailableError(fmt::format("checking metrics: cuptiDeviceGetChipName(0) failed: {}", api->describe(r)));
    }
    plan.chip = p.pChipName;
  }
  const auto config = profile::MetricConfig::get(*api, plan.chip, request.counters);
  plan.names = request.names;
  plan.counters = request.counters;
  plan.passes = config->passes();
  return plan;
}

}  // namespace kjit
