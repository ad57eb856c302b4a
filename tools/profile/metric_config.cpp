#include "tools/profile/metric_config.hpp"

#include "core/spi/base.hpp"

#include <kjit/error.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

namespace kjit::profile {
namespace {

CUpti_Profiler_Host_Object* make_host(const CuptiApi& api, const std::string& chip,
                                      const std::vector<std::uint8_t>& availability) {
  CUpti_Profiler_Host_Initialize_Params p{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
  p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  p.pChipName = chip.c_str();
  p.pCounterAvailabilityImage = availability.empty() ? nullptr : availability.data();
  const CUptiResult r = api.host_initialize(&p);
  if (r == CUPTI_SUCCESS) return p.pHostObject;
  std::string chips;
  CUpti_Profiler_Host_GetSupportedChips_Params c{CUpti_Profiler_Host_GetSupportedChips_Params_STRUCT_SIZE};
  if (api.host_supported_chips(&c) == CUPTI_SUCCESS) {
    for (std::size_t i = 0; i < c.numChips; ++i) chips += fmt::format("{}{}", i == 0 ? "" : " ", c.ppChipNames[i]);
  }
  if (r == CUPTI_ERROR_INVALID_CHIP_NAME || r == CUPTI_ERROR_INVALID_PARAMETER) {
    throw UsageError(fmt::format("checking metrics for chip \"{}\": CUPTI {} does not know that chip ({}); it knows: {}",
                                 chip, api.library, api.describe(r), chips));
  }
  throw UnavailableError(fmt::format("checking metrics for chip \"{}\": cuptiProfilerHostInitialize failed: {} (CUPTI {}; "
                                     "it opens libnvperf_host from its own folder or LD_LIBRARY_PATH)",
                                     chip, api.describe(r), api.library));
}

void drop_host(const CuptiApi& api, CUpti_Profiler_Host_Object* host) {
  if (host == nullptr) return;
  CUpti_Profiler_Host_Deinitialize_Params p{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
  p.pHostObject = host;
  api.host_deinitialize(&p);
}

bool valid(const CuptiApi& api, CUpti_Profiler_Host_Object* host, const std::string& name, CUpti_MetricType* type = nullptr) {
  CUpti_Profiler_Host_GetMetricProperties_Params p{CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE};
  p.pHostObject = host;
  p.pMetricName = name.c_str();
  if (api.host_metric_properties(&p) != CUPTI_SUCCESS) return false;
  if (type != nullptr) *type = p.metricType;
  return true;
}

}  // namespace

std::vector<std::string> closest_metric_names(const CuptiApi& api, CUpti_Profiler_Host_Object* host,
                                              const std::string& name, std::size_t count) {
  const std::size_t dot = name.find('.');
  const std::string base = name.substr(0, dot);
  const std::string suffix = dot == std::string::npos ? std::string() : name.substr(dot);
  std::set<std::string> candidates;
  CUpti_MetricType type{};
  if (valid(api, host, base, &type)) {
    // A known base metric with a wrong rollup or submetric: its valid spellings.
    CUpti_Profiler_Host_GetSubMetrics_Params p{CUpti_Profiler_Host_GetSubMetrics_Params_STRUCT_SIZE};
    p.pHostObject = host;
    p.metricType = type;
    p.pMetricName = base.c_str();
    if (api.host_sub_metrics(&p) == CUPTI_SUCCESS) {
      for (std::size_t i = 0; i < p.numOfSubmetrics; ++i) candidates.insert(base + p.ppSubMetrics[i]);
    }
  } else {
    // An unknown base: the nearest bases, with the asked suffix where that makes a valid name.
    std::vector<std::pair<std::size_t, std::string>> bases;
    for (int t = 0; t < CUPTI_METRIC_TYPE__COUNT; ++t) {
      CUpti_Profiler_Host_GetBaseMetrics_Params p{CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE};
      p.pHostObject = host;
      p.metricType = static_cast<CUpti_MetricType>(t);
      if (api.host_base_metrics(&p) != CUPTI_SUCCESS) continue;
      for (std::size_t i = 0; i < p.numMetrics; ++i) {
        std::string b = p.ppMetricNames[i];
        if (const std::size_t last = b.rfind('.'); last != std::string::npos) b.erase(0, last + 1);  // "LTS.Triage.lts__x"
        bases.emplace_back(kjit::base::edit_distance(base, b), std::move(b));
      }
    }
    std::sort(bases.begin(), bases.end());
    bases.erase(std::unique(bases.begin(), bases.end()), bases.end());
    for (std::size_t i = 0; i < bases.size() && candidates.size() < count; ++i) {
      const std::string with_suffix = bases[i].second + suffix;
      candidates.insert(!suffix.empty() && valid(api, host, with_suffix) ? with_suffix : bases[i].second);
    }
  }
  std::vector<std::pair<std::size_t, std::string>> ranked;
  for (const auto& c : candidates) ranked.emplace_back(kjit::base::edit_distance(name, c), c);
  std::sort(ranked.begin(), ranked.end());
  std::vector<std::string> out;
  for (std::size_t i = 0; i < ranked.size() && out.size() < count; ++i) out.push_back(ranked[i].second);
  return out;
}

std::shared_ptr<const MetricConfig> MetricConfig::get(const CuptiApi& api, const std::string& chip,
                                                      const std::vector<std::string>& counters,
                                                      const std::vector<std::uint8_t>& availability) {
  if (!api.metrics_missing.empty()) {
    throw UnavailableError(fmt::format("hardware counters need CUPTI's range profiler and profiler host API (CUDA 12.6 "
                                       "or newer); CUPTI {} lacks {}",
                                       api.library, api.metrics_missing));
  }
  if (counters.empty()) throw UsageError("checking metrics: no counter names given");
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const MetricConfig>> cache;  // kept for the process
  std::string key = chip + (availability.empty() ? "|named" : "|device");
  for (const auto& c : counters) key += "|" + c;
  std::lock_guard lock(mutex);
  if (auto it = cache.find(key); it != cache.end()) return it->second;

  std::shared_ptr<MetricConfig> config(new MetricConfig());
  config->m_api = &api;
  config->m_chip = chip;
  config->m_counters = counters;
  config->m_availability = availability;
  config->m_host = make_host(api, chip, config->m_availability);
  for (const auto& c : config->m_counters) {
    if (valid(api, config->m_host, c)) continue;
    const auto closest = closest_metric_names(api, config->m_host, c, 5);
    std::string list;
    for (const auto& n : closest) list += fmt::format("{}{}", list.empty() ? "" : ", ", n);
    throw UsageError(fmt::format("metric \"{}\" is not a metric of {}{}{}", c, chip,
                                 list.empty() ? "" : "; closest valid names: ", list));
  }
  for (const auto& c : config->m_counters) config->m_names.push_back(c.c_str());
  CUpti_Profiler_Host_ConfigAddMetrics_Params add{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
  add.pHostObject = config->m_host;
  add.ppMetricNames = config->m_names.data();
  add.numMetrics = config->m_names.size();
  CUptiResult r = api.host_add_metrics(&add);
  if (r != CUPTI_SUCCESS) {
    throw UsageError(fmt::format("metrics {} on {}: CUPTI cannot schedule them together: {}", fmt::join(counters, ", "),
                                 chip, api.describe(r)));
  }
  CUpti_Profiler_Host_GetConfigImageSize_Params size{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
  size.pHostObject = config->m_host;
  if ((r = api.host_config_image_size(&size)) != CUPTI_SUCCESS) {
    throw UnavailableError(fmt::format("cuptiProfilerHostGetConfigImageSize for {}: {}", chip, api.describe(r)));
  }
  config->m_image.resize(size.configImageSize);
  CUpti_Profiler_Host_GetConfigImage_Params image{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
  image.pHostObject = config->m_host;
  image.configImageSize = config->m_image.size();
  image.pConfigImage = config->m_image.data();
  if ((r = api.host_config_image(&image)) != CUPTI_SUCCESS) {
    throw UnavailableError(fmt::format("cuptiProfilerHostGetConfigImage for {}: {}", chip, api.describe(r)));
  }
  CUpti_Profiler_Host_GetNumOfPasses_Params passes{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
  passes.configImageSize = config->m_image.size();
  passes.pConfigImage = config->m_image.data();
  if ((r = api.host_passes(&passes)) != CUPTI_SUCCESS) {
    throw UnavailableError(fmt::format("cuptiProfilerHostGetNumOfPasses for {}: {}", chip, api.describe(r)));
  }
  config->m_passes = passes.numOfPasses;
  cache.emplace(key, config);
  return config;
}

std::string MetricConfig::evaluate(const std::vector<std::uint8_t>& counter_data, std::size_t range,
                                   std::vector<double>& values) const {
  std::lock_guard lock(m_mutex);
  values.assign(m_names.size(), 0.0);
  CUpti_Profiler_Host_EvaluateToGpuValues_Params p{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
  p.pHostObject = m_host;
  p.pCounterDataImage = counter_data.data();
  p.counterDataImageSize = counter_data.size();
  p.rangeIndex = range;
  p.ppMetricNames = const_cast<const char**>(m_names.data());
  p.numMetrics = m_names.size();
  p.pMetricValues = values.data();
  const CUptiResult r = m_api->host_evaluate(&p);
  if (r != CUPTI_SUCCESS) return fmt::format("cuptiProfilerHostEvaluateToGpuValues failed: {}", m_api->describe(r));
  return {};
}

MetricConfig::~MetricConfig() {
  if (m_api != nullptr) drop_host(*m_api, m_host);
}

}  // namespace kjit::profile
