// kjit::Runtime: the facade over the request path's parts. load() is one get_or_load of the
// module registry (request/module_registry), whose miss asks the compile service
// (request/compile_service: disk cache, then NVRTC once per key) and loads (driver/). Each entry
// point normalizes its options once and hands that down. Dumps (KJIT_DUMP_DIR) plug in through
// the compile service's result hook, made by the dump writer libkjit_tools installs
// (set_dump_writer): the core calls no tools code.
#include <kjit/error.hpp>
#include <kjit/runtime.hpp>

#include "core/system/hash.hpp"
#include "core/base/default_log.hpp"
#include "core/base/nvrtc_library.hpp"
#include "core/base/toolkit_location.hpp"
#include "core/compile/nvrtc/nvrtc_info.hpp"
#include "core/compile/options/option_marshalling.hpp"
#include "core/request/compile_service.hpp"
#include "core/driver/module_access.hpp"
#include "core/request/counters.hpp"
#include "core/request/link_request.hpp"
#include "core/request/module_registry.hpp"
#include "core/request/request_hash.hpp"
#include "core/trace/phase.hpp"
#include "core/nvrtc_preparation.hpp"
#include "core/runtime_access.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <mutex>

namespace kjit {

namespace {

// The dump writer libkjit_tools installs (set_dump_writer); read once per Runtime made.
std::mutex g_dump_writer_mutex;
DumpWriter g_dump_writer;

DumpWriter dump_writer() {
  std::lock_guard lock(g_dump_writer_mutex);
  return g_dump_writer;
}

}  // namespace

void set_dump_writer(DumpWriter writer) {
  std::lock_guard lock(g_dump_writer_mutex);
  g_dump_writer = std::move(writer);
}

namespace {

}  // namespace

struct Runtime::Impl {
  RuntimeConfig config;
  request::Counters counters;
  request::CompileService service;
  request::ModuleRegistry registry;

  explicit Impl(RuntimeConfig c)
      : config(std::move(c)),
        service(config, counters, [this](LogLevel level, std::string_view message) { log(level, message); }),
        registry(counters) {
    if (config.prepare) {
      // The Runtime's own thread first: made while NVRTC's open maps and relocates it, a thread
      // waits for the loader (a remote hit's backfill waited 6 ms on an H200 host). A hit needs no
      // NVRTC (base::nvrtc_facts), so nothing else of the request waits for the open.
      service.start_background();
      prepare(config);
    }
    if (auto problem = base::toolkit_variable_problem()) log(LogLevel::warn, *problem);
    if (!config.dump_dir.empty()) {
      auto log_to_this = [this](LogLevel level, std::string_view message) { log(level, message); };
      if (DumpWriter writer = dump_writer()) {
        service.set_result_hook(writer(config, log_to_this));
      } else {
        log(LogLevel::warn, fmt::format("KJIT_DUMP_DIR {}: nothing in this program writes dumps; they come with "
                                        "libkjit_tools (kjit::install_tools(), <kjit/tools.hpp>)",
                                        config.dump_dir.string()));
      }
    }
  }

  void log(LogLevel level, std::string_view message) const {
    if (level <= config.log_level) deliver(level, message);
  }

  // The one normalization of a request: it warns of each nvcc host-only flag it drops, once;
  // the parts below take NormalizedOptions and never normalize again.
  compile::NormalizedOptions normalize(const CompileOptions& options) const {
    std::vector<std::string> dropped;
    compile::NormalizedOptions o = compile::normalize(options, &dropped);
    for (const auto& message : dropped) log(LogLevel::warn, message);
    return o;
  }

  void deliver(LogLevel level, std::string_view message) const {
    if (config.log) {
      config.log(level, message);
    } else {
      base::print_log(level, message);
    }
  }

  // The linked result for options.arch (native: `device`'s, or the current one's).
  CompileResult link(const Link& link, const CompileOptions& options, std::optional<Device> device) {
    const compile::NormalizedOptions o = normalize(options);
    Arch arch = service.resolve(o->arch, device);
    return request::link(service, link, arch, request::PreparedLink::make(link, o, arch, service.fast_path()));
  }
};

Runtime& Runtime::global() {
  // Never destroyed: at exit the driver may already be shut down, and unloading modules then
  // would crash. The process's end releases everything.
  static Runtime* runtime = new Runtime();
  return *runtime;
}

Runtime::Runtime() : Runtime(RuntimeConfig::from_environment()) {}
Runtime::Runtime(RuntimeConfig config) : m_impl(std::make_unique<Impl>(std::move(config))) {}
Runtime::~Runtime() {
  try {
    flush_stats();
  } catch (...) {
  }
}

CompileResult Runtime::compile(const Program& program, const CompileOptions& options) {
  const compile::NormalizedOptions o = m_impl->normalize(options);
  return m_impl->service.obtain(program, o, m_impl->service.resolve(o->arch, std::nullopt));
}

Module Runtime::load(const Program& program, const CompileOptions& options, std::optional<Device> device) {
  Impl& im = *m_impl;
  Device dev = device ? *device : Device::current();
  trace::PhaseScope hashing;
  request::RequestHash rh = request::request_hash(program, options, dev.ordinal());
  hashing.end(trace::Phase::request_hash, program.name());
  trace::PhaseScope lookup;
  auto answer = im.registry.get_or_load(rh, dev, [&] { return im.service.obtain(program, im.normalize(options), dev); });
  if (answer.outcome == Outcome::registry) {
    lookup.end(trace::Phase::registry_hit, program.name(), answer.module.compile_result().key);
  }
  return driver::ModuleAccess::answered(std::move(answer.module), answer.outcome);
}

Module Runtime::load(CompileResult result, std::optional<Device> device) {
  Device dev = device ? *device : Device::current();
  if (result.key.empty()) return driver::ModuleAccess::load(std::move(result), dev);  // not from the cache: nothing to share
  auto answer = m_impl->registry.get_or_load(std::move(result), dev);
  return driver::ModuleAccess::answered(std::move(answer.module), answer.outcome);
}

CompileResult Runtime::link(const Link& link, const CompileOptions& options) {
  return m_impl->link(link, options, std::nullopt);
}

Module Runtime::load(const Link& link, const CompileOptions& options, std::optional<Device> device) {
  Device dev = device ? *device : Device::current();
  return load(m_impl->link(link, options, dev), dev);
}

Arch Runtime::resolve(const Arch& arch, std::optional<Device> device) const {
  return m_impl->service.resolve(arch, device);
}

Runtime::KeyExplanation Runtime::explain(const Program& program, const CompileOptions& options) {
  const compile::NormalizedOptions o = m_impl->normalize(options);
  Arch arch = m_impl->service.resolve(o->arch, std::nullopt);
  auto flags = compile::marshal(o, arch);
  auto key = request::CacheKey::compute(program, flags, arch, o->include_dirs, program.directory(),
                                        m_impl->service.fast_path(), cache::Hasher::Fields::keep);
  KeyExplanation out;
  out.key = key.key.hex();
  for (const auto& f : key.fields) out.fields.emplace_back(f.label, f.value);
  return out;
}

const RuntimeConfig& Runtime::config() const { return m_impl->config; }
std::filesystem::path Runtime::cache_dir() const { return m_impl->service.cache_dir(); }

RuntimeStats Runtime::stats() const {
  return m_impl->counters.snapshot();
}

void Runtime::flush_stats() { m_impl->service.flush(); }

request::EntryStore& RuntimeAccess::entries(Runtime& runtime) { return runtime.m_impl->service; }
void Runtime::report(std::string_view message) const { m_impl->deliver(LogLevel::info, message); }
void Runtime::log(LogLevel level, std::string_view message) const { m_impl->log(level, message); }

void prepare(Wait wait) {
  NvrtcPreparation::start();
  if (wait == Wait::yes) NvrtcPreparation::wait();
}

void prepare(const RuntimeConfig& config) {
  if (config.prepare) NvrtcPreparation::start();
}

void add_nvrtc_fallback(const std::filesystem::path& library) { base::add_nvrtc_fallback(library.string()); }

std::string nvrtc_version() { return compile::NvrtcInfo::version(); }
std::vector<int> supported_archs() { return compile::NvrtcInfo::supported_archs(); }
std::string_view version() { return KJIT_VERSION; }

}  // namespace kjit
