// kjit::profile::MetricConfig: the profiler host API's side of hardware counters, for one chip
// ("GH100") and one list of counter names: the names checked (an unknown one is a UsageError that
// lists the closest valid names), the config image the range profiler takes and its number of
// passes, computed once per chip and list and kept for the process; then the evaluation of a
// decoded counter-data image into values. It needs libcupti (which opens libnvperf_host) and no
// GPU. get() throws UsageError and UnavailableError; evaluate() reports, never throws.
#pragma once

#include "tools/profile/cupti_library.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kjit::profile {

class MetricConfig {
public:
  // `availability`: the device's counter-availability image (cuptiProfilerGetCounterAvailability),
  // or empty for a chip named without a device.
  static std::shared_ptr<const MetricConfig> get(const CuptiApi& api, const std::string& chip,
                                                 const std::vector<std::string>& counters,
                                                 const std::vector<std::uint8_t>& availability = {});

  const std::string& chip() const { return m_chip; }
  const std::vector<std::string>& counters() const { return m_counters; }
  const std::vector<std::uint8_t>& image() const { return m_image; }
  std::size_t passes() const { return m_passes; }

  // The counters' values for range `range` of a decoded counter-data image, in counters() order.
  // Empty on success; else why CUPTI refused.
  std::string evaluate(const std::vector<std::uint8_t>& counter_data, std::size_t range, std::vector<double>& values) const;

  MetricConfig(const MetricConfig&) = delete;
  MetricConfig& operator=(const MetricConfig&) = delete;
  ~MetricConfig();

private:
  MetricConfig() = default;
  const CuptiApi* m_api = nullptr;
  CUpti_Profiler_Host_Object* m_host = nullptr;
  std::string m_chip;
  std::vector<std::string> m_counters;
  std::vector<const char*> m_names;  // into m_counters, for CUPTI
  std::vector<std::uint8_t> m_availability;
  std::vector<std::uint8_t> m_image;
  std::size_t m_passes = 0;
  mutable std::mutex m_mutex;  // the host object serves one call at a time
};

// The closest valid spellings of an unknown metric name on a chip's host object (for the message).
std::vector<std::string> closest_metric_names(const CuptiApi& api, CUpti_Profiler_Host_Object* host,
                                              const std::string& name, std::size_t count);


}  // namespace kjit::profile
