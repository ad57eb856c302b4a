// kjit::load_inline: the C++ load_inline, a thin call on Runtime::load (registry, disk, NVRTC) of
// the Runtime for its build directory; the module's outcome says how the call was answered.
#include <kjit/error.hpp>
#include <kjit/load_inline.hpp>
#include <kjit/runtime.hpp>

#include "core/runtime_access.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <mutex>

namespace kjit {
namespace {

// One Runtime per build_directory, living as long as the process (registries stay warm).
Runtime& runtime_for(const std::filesystem::path& build_directory) {
  if (build_directory.empty()) return Runtime::global();
  static std::mutex mutex;
  // Never destroyed, like Runtime::global(): modules must not be unloaded after the driver.
  static auto& runtimes = *new std::map<std::filesystem::path, std::unique_ptr<Runtime>>();
  std::lock_guard lock(mutex);
  auto& slot = runtimes[build_directory];
  if (!slot) {
    RuntimeConfig config = RuntimeConfig::from_environment();
    config.cache_dir = build_directory;
    slot = std::make_unique<Runtime>(std::move(config));
  }
  return *slot;
}

const char* describe(Outcome outcome) {
  switch (outcome) {
  case Outcome::registry: return "already loaded";
  case Outcome::compiled: return "compiled";
  case Outcome::waited: return "waited for another compile";
  case Outcome::remote_hit: return "remote cache hit";
  case Outcome::hit: return "cache hit";
  }
  return "cache hit";
}

}  // namespace

Module load_inline(const LoadInlineOptions& options) {
  if (options.name.empty()) throw UsageError("load_inline: the name is empty; give the extension a name");
  if (options.cuda_sources.empty()) {
    throw UsageError(fmt::format("load_inline {}: cuda_sources is empty", options.name));
  }
  Runtime& rt = runtime_for(options.build_directory);
  CompileOptions o;
  o.flags = options.extra_cuda_cflags;
  Module m = rt.load(Program(options.name + ".cu", options.cuda_sources), o);
  std::vector<std::string> missing;
  for (const auto& f : options.functions) {
    if (!m.has_kernel(f)) missing.push_back(f);
  }
  if (!missing.empty()) {
    throw UsageError(fmt::format("load_inline {}: function{} {} not found in the compiled module; it has {}",
                                 options.name, missing.size() == 1 ? "" : "s", fmt::join(missing, ", "),
                                 fmt::join(m.kernel_names(), ", ")));
  }
  if (options.verbose) {  // how the call was answered, and the compile's log (NVRTC's warnings, kjit's notes)
    const CompileResult& r = m.compile_result();
    std::string log = r.log;
    while (!log.empty() && log.back() == '\n') log.pop_back();
    RuntimeAccess::report(rt, fmt::format("load_inline {}: {} (key {}, cache {}){}{}", options.name,
                                          describe(m.outcome()), r.key, rt.cache_dir().string(),
                                          log.empty() ? "" : "\n", log));
  }
  return m;
}

}  // namespace kjit
