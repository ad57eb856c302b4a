// kjit::profile::ProfilerTuneExplainer: the tuner's explainer (KJIT_TUNE_METRICS) over a Profiler:
// each candidate's one launch measured by a Profiler of its own with the metrics asked for.
#pragma once

#include <kjit/tune.hpp>

namespace kjit::profile {

class ProfilerTuneExplainer final : public TuneExplainer {
public:
  std::optional<std::vector<std::pair<std::string, double>>> measure(const std::string& metrics,
                                                                    const std::function<void()>& launch) override;
};

}  // namespace kjit::profile
