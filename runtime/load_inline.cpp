// kjit::load_inline: the C++ load_inline. A repeated call (same name, sources, functions, flags,
// build directory and device) is one hash and one shared-lock lookup: its module, whose functions
// were checked the first time, is kept under the call's identity. Anything that differs misses
// and goes the whole way (Runtime::load: registry, disk, NVRTC).
#include <kjit/error.hpp>
#include <kjit/load_inline.hpp>
#include <kjit/runtime.hpp>

#include "runtime/request/request_hash.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

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

// Every field of a call that can change its module, and the device it loads on.
request::RequestHash identity(const LoadInlineOptions& o, int device) {
  request::RequestHasher h;
  h.num(static_cast<std::uint64_t>(device));
  h.str(o.name);
  h.str(o.cuda_sources);
  h.str(o.build_directory.native());
  h.num(o.functions.size());
  for (const auto& f : o.functions) h.str(f);
  h.num(o.extra_cuda_cflags.size());
  for (const auto& f : o.extra_cuda_cflags) h.str(f);
  return h.finish();
}

// Calls already answered: identity -> (module, its Runtime). Never destroyed, like the Runtimes.
struct Answered {
  std::shared_mutex mutex;
  std::unordered_map<request::RequestHash, std::pair<Module, Runtime*>, request::RequestHashHasher> calls;
};
Answered& answered() {
  static auto& a = *new Answered();
  return a;
}

}  // namespace

Module load_inline(const LoadInlineOptions& options) {
  if (options.name.empty()) throw UsageError("load_inline: the name is empty; give the extension a name");
  if (options.cuda_sources.empty()) {
    throw UsageError(fmt::format("load_inline {}: cuda_sources is empty", options.name));
  }
  const Device device = Device::current();
  const request::RequestHash id = identity(options, device.ordinal());
  Answered& a = answered();
  {
    std::shared_lock lock(a.mutex);
    if (auto it = a.calls.find(id); it != a.calls.end()) {
      if (options.verbose) {
        it->second.second->report(fmt::format("load_inline {}: already loaded (key {}, cache {})", options.name,
                                              it->second.first.compile_result().key,
                                              it->second.second->cache_dir().string()));
      }
      return it->second.first;
    }
  }
  Runtime& rt = runtime_for(options.build_directory);
  CompileOptions o;
  o.flags = options.extra_cuda_cflags;
  auto before = rt.stats();
  Module m = rt.load(Program(options.name + ".cu", options.cuda_sources), o, device);
  std::vector<std::string> missing;
  for (const auto& f : options.functions) {
    if (!m.has_kernel(f)) missing.push_back(f);
  }
  if (!missing.empty()) {
    throw UsageError(fmt::format("load_inline {}: function{} {} not found in the compiled module; it has {}",
                                 options.name, missing.size() == 1 ? "" : "s", fmt::join(missing, ", "),
                                 fmt::join(m.kernel_names(), ", ")));
  }
  if (options.verbose) {
    auto after = rt.stats();
    const char* how = after.registry_hits > before.registry_hits ? "already loaded"
                      : after.compiles > before.compiles       ? "compiled"
                      : after.waits > before.waits             ? "waited for another compile"
                                                               : "cache hit";
    rt.report(fmt::format("load_inline {}: {} (key {}, cache {})", options.name, how, m.compile_result().key,
                          rt.cache_dir().string()));
  }
  std::unique_lock lock(a.mutex);
  a.calls.emplace(id, std::make_pair(m, &rt));
  return m;
}

}  // namespace kjit
