#include "tools/profile/tune_explainer.hpp"

#include <kjit/tools/profile.hpp>

namespace kjit::profile {

std::optional<std::vector<std::pair<std::string, double>>> ProfilerTuneExplainer::measure(
    const std::string& metrics, const std::function<void()>& launch) {
  ProfileOptions po;
  po.metrics = {metrics};
  po.memory = false;
  po.log = [](LogLevel, std::string_view) {};
  Profiler p(po);  // a name it does not know is the user's to fix: UsageError
  if (!p.active()) return std::nullopt;  // another Profiler records: no counters now
  launch();
  p.stop();
  const ProfileSummary s = p.summary();
  if (!s.metric_message.empty()) return std::nullopt;  // counters refused (permissions, the chip)
  const ProfileKernelRow* longest = nullptr;  // the candidate's main kernel, should it launch several
  for (const auto& r : s.kernels) {
    if (r.measured > 0 && (longest == nullptr || r.gpu_total_us > longest->gpu_total_us)) longest = &r;
  }
  std::vector<std::pair<std::string, double>> figures;
  if (longest != nullptr) {
    for (const auto& m : longest->metrics) figures.emplace_back(m.name, m.mean);
  }
  return figures;
}

}  // namespace kjit::profile
