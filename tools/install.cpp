// kjit::install_tools: the tools' dump writer and tuner explainer, given to the core.
#include <kjit/runtime.hpp>
#include <kjit/tools/install.hpp>
#include <kjit/tune.hpp>

#include "tools/inspect/dump_hook.hpp"
#include "tools/profile/tune_explainer.hpp"

#include <mutex>

namespace kjit {

void install_tools() {
  static std::once_flag once;
  std::call_once(once, [] {
    set_dump_writer([](const RuntimeConfig& config, std::function<void(LogLevel, std::string_view)> log) {
      return inspect::dump_hook(config.dump_dir, config.dump_hits, std::move(log));
    });
    set_tune_explainer(std::make_shared<profile::ProfilerTuneExplainer>());
  });
}

}  // namespace kjit
