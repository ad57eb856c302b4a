// kjit::Runtime: registry -> disk cache -> NVRTC, with compile-once across threads and
// processes, and graceful degradation when the cache cannot be used.
#include <kjit/error.hpp>
#include <kjit/inspect.hpp>
#include <kjit/runtime.hpp>

#include "cache/config.hpp"
#include "cache/store.hpp"
#include "runtime/environment.hpp"
#include "runtime/cache_key.hpp"
#include "runtime/driver_api.hpp"
#include "runtime/nvrtc_compiler.hpp"
#include "runtime/nvtx.hpp"
#include "runtime/option_marshalling.hpp"
#include "runtime/pch_directories.hpp"
#include "runtime/request_hash.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace kjit {
namespace {

using runtime::env_flag;

std::string encode_lowered_names(const std::vector<std::pair<std::string, std::string>>& names) {
  std::string out;
  for (const auto& [expr, mangled] : names) {
    out += expr;
    out.push_back('\0');
    out += mangled;
    out.push_back('\0');
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> decode_lowered_names(std::string_view bytes) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    std::size_t a = bytes.find('\0', pos);
    if (a == std::string_view::npos) break;
    std::size_t b = bytes.find('\0', a + 1);
    if (b == std::string_view::npos) break;
    out.emplace_back(std::string(bytes.substr(pos, a - pos)), std::string(bytes.substr(a + 1, b - a - 1)));
    pos = b + 1;
  }
  return out;
}

}  // namespace

[[gnu::hot]] RuntimeConfig RuntimeConfig::from_environment() {
  RuntimeConfig c;
  // KJIT_CACHE_DIR is read by the Runtime itself when cache_dir is empty (cache::default_cache_dir),
  // as a string: a fresh process's first request then builds no std::filesystem::path.
  if (const char* v = std::getenv("KJIT_CACHE_MAX_SIZE"); v && *v) {
    auto size = cache::parse_size(v);
    if (!size) {
      throw UsageError(fmt::format("reading KJIT_CACHE_MAX_SIZE=\"{}\": expected a size such as 2G, 512M or "
                                   "1048576", v));
    }
    c.cache_max_size = *size;
  }
  c.cache_disabled = env_flag("KJIT_CACHE_DISABLE");
  c.always_compile = env_flag("KJIT_ALWAYS_COMPILE");
  if (const char* v = std::getenv("KJIT_DUMP_DIR"); v && *v) c.dump_dir = v;
  if (const char* v = std::getenv("KJIT_LOG"); v && *v) {
    auto level = parse_log_level(v);
    if (!level) throw UsageError(fmt::format("reading KJIT_LOG=\"{}\": expected error, warn, info or debug", v));
    c.log_level = *level;
  }
  return c;
}

struct Runtime::Impl {
  RuntimeConfig config;
  std::string cache_dir;                // a string: the hit path touches no std::filesystem
  std::unique_ptr<cache::Store> store;  // null when the cache is disabled
  std::atomic<bool> warned_store{false};
  runtime::PchDirectories pch;  // used when config.precompiled_headers

  // In-process registry: request hash -> loaded module (the hot path), and compile key +
  // device -> loaded module (two spellings of one request share a module).
  std::shared_mutex registry_mutex;
  std::unordered_map<runtime::RequestHash, Module, runtime::RequestHashHasher> by_request;
  std::map<std::pair<std::string, int>, Module> by_key;

  // Compiles in flight in this process: key -> result others wait for.
  std::mutex inflight_mutex;
  std::unordered_map<cache::Key, std::shared_future<CompileResult>, cache::KeyHash> inflight;

  std::atomic<std::uint64_t> registry_hits{0}, disk_hits{0}, misses{0}, compiles{0}, waits{0}, damaged{0},
      store_failures{0};

  [[gnu::hot]] explicit Impl(RuntimeConfig c) : config(std::move(c)) {
    cache_dir = config.cache_dir.empty() ? cache::default_cache_dir() : config.cache_dir.native();
    if (!config.cache_disabled) {
      store = std::make_unique<cache::Store>(cache::StoreConfig{cache_dir, config.cache_max_size});
    }
  }

  void log(LogLevel level, std::string_view message) const {
    if (level <= config.log_level) deliver(level, message);
  }

  void deliver(LogLevel level, std::string_view message) const {
    if (config.log) {
      config.log(level, message);
    } else {
      std::fprintf(stderr, "kjit: %s: %.*s\n", std::string(to_string(level)).c_str(),
                   static_cast<int>(message.size()), message.data());
    }
  }

  [[gnu::hot]] Arch resolve(const Arch& arch, std::optional<Device> device) const {
    if (!arch.is_native()) {
      const auto& supported = nvrtc_archs();
      if (arch.number() < supported.front() || (arch.is_real() && std::find(supported.begin(), supported.end(),
                                                                          arch.number()) == supported.end())) {
        throw UsageError(fmt::format("compiling for {}: NVRTC {} does not support it; supported: sm_{}",
                                     arch.str(), runtime::NvrtcCompiler::version(), fmt::join(supported, ", sm_")));
      }
      return arch;
    }
    Device d = device ? *device : Device::current();  // throws without a driver
    int cc = d.compute_capability();
    const auto& supported = nvrtc_archs();
    if (std::find(supported.begin(), supported.end(), cc) != supported.end()) return Arch::sm(cc);
    // A device newer than NVRTC: PTX for the newest arch it knows; the driver compiles it.
    int best = 0;
    for (int a : supported) {
      if (a <= cc) best = std::max(best, a);
    }
    if (best == 0) {
      throw UsageError(fmt::format("compiling for device {} (sm_{}): NVRTC {} supports only sm_{}", d.ordinal(), cc,
                                   runtime::NvrtcCompiler::version(), fmt::join(supported, ", sm_")));
    }
    return Arch::compute(best);
  }

  // The arch a request resolves to when NVRTC supports it, without asking NVRTC: good enough to
  // look for a cache entry, which exists only if this NVRTC (its version is in the key) compiled
  // for that arch. A miss then resolves properly.
  [[gnu::hot]] static Arch resolve_unchecked(const Arch& arch, const Device& device) {
    return arch.is_native() ? Arch::sm(device.compute_capability()) : arch;
  }

  // NVRTC's real archs, ascending (never empty).
  [[gnu::hot]] static const std::vector<int>& nvrtc_archs() {
    static const std::vector<int> archs = [] {
      auto a = runtime::NvrtcCompiler::supported_archs();
      std::sort(a.begin(), a.end());
      if (a.empty()) a.push_back(0);
      return a;
    }();
    return archs;
  }

  // The result from a checked entry read in place (the first section of each kind counts):
  // the small sections are copied out, and the entry's buffer itself becomes the cubin, so a hit
  // copies no cubin and allocates no second buffer for it.
  [[gnu::hot]] CompileResult from_entry(cache::GetResult&& g, const Program& program, const Arch& arch,
                                        std::vector<std::string>&& flags, const cache::Key& key) const {
    CompileResult r;
    r.program_name = program.name();
    r.arch = arch;
    r.options = std::move(flags);
    const cache::SectionRef* cubin = nullptr;
    bool seen[6] = {};
    const std::string_view bytes = g.bytes;
    for (const cache::SectionRef& s : g.sections) {
      auto k = static_cast<std::size_t>(s.kind);
      if (k >= 6 || seen[k]) continue;
      seen[k] = true;
      const std::string_view view = bytes.substr(s.offset, s.size);
      switch (s.kind) {
      case cache::SectionKind::ptx: r.ptx = view; break;
      case cache::SectionKind::cubin: cubin = &s; break;
      case cache::SectionKind::log: r.log = view; break;
      case cache::SectionKind::lowered_names: r.lowered_names = decode_lowered_names(view); break;
      case cache::SectionKind::meta: break;
      }
    }
    if (cubin != nullptr) {
      std::string image = std::move(g.bytes);
      std::memmove(image.data(), image.data() + cubin->offset, cubin->size);
      image.resize(cubin->size);
      // A cubin much smaller than its entry (a large PTX beside it) gets a buffer of its own.
      if (image.capacity() > 2 * image.size() + 65536) image.shrink_to_fit();
      r.cubin = std::move(image);
    }
    r.key = key.hex();
    r.outcome = Outcome::hit;
    return r;
  }

  cache::Entry to_entry(const CompileResult& r) const {
    cache::Entry e;
    if (r.has_cubin()) e.set(cache::SectionKind::cubin, r.cubin);
    e.set(cache::SectionKind::ptx, r.ptx);
    e.set(cache::SectionKind::log, r.log);
    e.set(cache::SectionKind::lowered_names, encode_lowered_names(r.lowered_names));
    e.set(cache::SectionKind::meta,
          nlohmann::json{{"program", r.program_name},
                         {"arch", r.arch.str()},
                         {"kjit", KJIT_VERSION},
                         {"nvrtc", runtime::NvrtcCompiler::version()},
                         {"compile_ms", r.compile_ms},
                         {"created", std::chrono::duration_cast<std::chrono::seconds>(
                                         std::chrono::system_clock::now().time_since_epoch())
                                         .count()}}
              .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return e;
  }

  [[gnu::hot]] std::optional<CompileResult> lookup(const cache::Key& key, const Program& program, const Arch& arch,
                                      const std::vector<std::string>& flags) {
    if (!store || config.always_compile) return std::nullopt;
    cache::GetResult g = store->get_in_place(key);
    switch (g.outcome) {
    case cache::GetResult::Outcome::hit:
      return from_entry(std::move(g), program, arch, std::vector<std::string>(flags), key);
    case cache::GetResult::Outcome::damaged:
      ++damaged;
      log(LogLevel::warn, fmt::format("cache entry for program {} (key {}) was damaged and is recompiled: {}",
                                      program.name(), key.hex(), g.message));
      return std::nullopt;
    case cache::GetResult::Outcome::error:
      log(LogLevel::warn, fmt::format("reading the cache entry for program {} (key {}): {}", program.name(),
                                      key.hex(), g.message));
      return std::nullopt;
    case cache::GetResult::Outcome::miss: return std::nullopt;
    }
    return std::nullopt;
  }

  CompileResult compile_now(const Program& program, const std::vector<std::string>& flags, const Arch& arch,
                            const cache::Key& key) {
    runtime::nvtx::Range range("compile", program.name());
    runtime::NvrtcOutput out;
    if (config.precompiled_headers) {
      auto lease = pch.acquire();
      out = runtime::NvrtcCompiler::compile(program, flags, arch, lease.dir());
    } else {
      out = runtime::NvrtcCompiler::compile(program, flags, arch);
    }
    if (!out.succeeded) {
      std::string excerpt = runtime::source_excerpt(program.name(), program.source(), out.result.log);
      throw CompileError(program.name(), flags, out.result.log, excerpt,
                         fmt::format("compiling program {} with NVRTC {} ({}) failed:\n{}{}{}", program.name(),
                                     runtime::NvrtcCompiler::version(), fmt::join(flags, " "), out.result.log,
                                     excerpt.empty() ? "" : "\nsource:\n", excerpt));
    }
    ++compiles;
    if (store) {
      store->stats().compiles.fetch_add(1, std::memory_order_relaxed);
    }
    out.result.key = key.hex();
    out.result.outcome = Outcome::compiled;
    if (store) {
      cache::PutResult p = store->put(key, to_entry(out.result));
      if (!p.stored) {
        ++store_failures;
        if (!warned_store.exchange(true)) {
          log(LogLevel::warn, fmt::format("cannot write to the kjit cache in {} ({}); kernels are compiled in memory "
                                          "and not kept", cache_dir, p.message));
        }
      }
    }
    return std::move(out.result);
  }

  // Disk cache, then a compile that happens once per key across threads and processes.
  // KJIT_DUMP_DIR: a folder per compile (and per hit when asked); a failure is logged, never thrown.
  void dump(const Program& program, const CompileResult& result) const {
    if (config.dump_dir.empty() || (result.outcome == Outcome::hit && !config.dump_hits)) return;
    try {
      auto folder = inspect::write_dump(config.dump_dir, program, result);
      log(LogLevel::info, fmt::format("dumped program {} to {}", program.name(), folder.string()));
    } catch (const std::exception& e) {
      log(LogLevel::warn, fmt::format("dumping program {} into {}: {}", program.name(), config.dump_dir.string(),
                                      e.what()));
    }
  }

  // A request's compile flags and cache key for one arch.
  struct Prepared {
    std::vector<std::string> flags;
    runtime::CacheKey key;
  };

  // `options` are already normalized().
  [[gnu::hot]] static Prepared prepare(const Program& program, const CompileOptions& options, const Arch& arch) {
    std::vector<std::string> flags = runtime::marshal(options, arch);
    runtime::CacheKey key =
        runtime::CacheKey::compute(program, flags, arch, options.include_dirs, program.directory());
    return Prepared{std::move(flags), std::move(key)};
  }

  // The disk cache's entry for a prepared request, or nullopt (the store counts the miss).
  [[gnu::hot]] std::optional<CompileResult> disk_hit(const Program& program, const Arch& arch, const Prepared& p) {
    auto hit = lookup(p.key.key, program, arch, p.flags);
    if (hit) ++disk_hits;
    return hit;
  }

  // The disk cache, then a compile that happens once per key across threads and processes.
  CompileResult fetch(const Program& program, const Arch& arch, const Prepared& p) {
    std::optional<CompileResult> hit = disk_hit(program, arch, p);
    return hit ? std::move(*hit) : compile_once(program, arch, p);
  }

  CompileResult obtain(const Program& program, const CompileOptions& options, const Arch& arch) {
    CompileResult r = fetch(program, arch, prepare(program, options, arch));
    dump(program, r);
    return r;
  }

  // After a disk miss: in this process, the first thread compiles and the others wait for its
  // result; across processes, the cache lock does the same.
  CompileResult compile_once(const Program& program, const Arch& arch, const Prepared& p) {
    const cache::Key& key = p.key.key;
    std::promise<CompileResult> promise;
    std::shared_future<CompileResult> future;
    {
      std::lock_guard lock(inflight_mutex);
      if (auto it = inflight.find(key); it != inflight.end()) {
        future = it->second;
      } else {
        inflight.emplace(key, promise.get_future().share());
      }
    }
    if (future.valid()) {
      ++waits;
      CompileResult r = future.get();  // rethrows the compiler's error
      r.outcome = Outcome::waited;
      return r;
    }
    try {
      CompileResult r = obtain_across_processes(program, p.flags, arch, key);
      promise.set_value(r);
      std::lock_guard lock(inflight_mutex);
      inflight.erase(key);
      return r;
    } catch (...) {
      promise.set_exception(std::current_exception());
      std::lock_guard lock(inflight_mutex);
      inflight.erase(key);
      throw;
    }
  }

  CompileResult obtain_across_processes(const Program& program, const std::vector<std::string>& flags,
                                        const Arch& arch, const cache::Key& key) {
    ++misses;
    if (!store) return compile_now(program, flags, arch, key);
    auto progress = [&](std::chrono::milliseconds waited) {
      log(LogLevel::info, fmt::format("waiting {:.1f} s for another process compiling program {} (key {})",
                                      waited.count() / 1000.0, program.name(), key.hex()));
    };
    std::string lock_error;
    auto lock = store->lock(key, config.lock_timeout, progress, config.wait_progress_every, &lock_error);
    if (!lock) {
      log(LogLevel::info, fmt::format("compiling program {} (key {}) without the cache lock: {}", program.name(),
                                      key.hex(), lock_error.empty() ? "the wait bound passed" : lock_error));
      CompileResult r = compile_now(program, flags, arch, key);
      flush();
      return r;
    }
    if (!config.always_compile) {
      // Another process may have compiled it while this one waited for the lock.
      if (auto hit = lookup(key, program, arch, flags)) {
        ++waits;
        store->stats().waits.fetch_add(1, std::memory_order_relaxed);
        hit->outcome = Outcome::waited;
        return std::move(*hit);
      }
      // The re-check under the lock is part of the same request: one miss, not two.
      store->stats().misses.fetch_sub(1, std::memory_order_relaxed);
    }
    CompileResult r = compile_now(program, flags, arch, key);
    lock->release();
    flush();
    return r;
  }

  // Compiles are rare and slow; their counters go to the persistent stats right away.
  void flush() {
    if (store) store->flush_stats();
  }
};

Runtime& Runtime::global() {
  // Never destroyed: at exit the driver may already be shut down, and unloading modules then
  // would crash. The process's end releases everything.
  static Runtime* runtime = new Runtime();
  return *runtime;
}

[[gnu::hot]] Runtime::Runtime() : Runtime(RuntimeConfig::from_environment()) {}
[[gnu::hot]] Runtime::Runtime(RuntimeConfig config) : m_impl(std::make_unique<Impl>(std::move(config))) {}
Runtime::~Runtime() {
  try {
    flush_stats();
  } catch (...) {
  }
}

CompileResult Runtime::compile(const Program& program, const CompileOptions& options) {
  CompileOptions o = normalized(options);
  Arch arch = m_impl->resolve(o.arch, std::nullopt);
  return m_impl->obtain(program, o, arch);
}

[[gnu::hot]] Module Runtime::load(const Program& program, const CompileOptions& options, std::optional<Device> device) {
  Impl& im = *m_impl;
  Device dev = device ? *device : Device::current();
  runtime::RequestHash rh = runtime::request_hash(program, options, dev.ordinal());
  {
    std::shared_lock lock(im.registry_mutex);
    if (auto it = im.by_request.find(rh); it != im.by_request.end()) {
      ++im.registry_hits;
      return it->second;
    }
  }
  CompileOptions o = normalized(options);
  // The disk cache first, under the arch the request resolves to when NVRTC supports it: a hit
  // asks NVRTC nothing. An entry for that arch exists only if this NVRTC (its version is in the
  // key) compiled for it. A miss resolves the arch properly, which may throw for an arch NVRTC
  // does not support.
  const Arch guess = Impl::resolve_unchecked(o.arch, dev);
  const Impl::Prepared p = Impl::prepare(program, o, guess);
  std::optional<CompileResult> hit = im.disk_hit(program, guess, p);
  CompileResult result;
  if (hit) {
    result = std::move(*hit);
  } else if (const Arch arch = im.resolve(o.arch, dev); arch == guess) {
    result = im.compile_once(program, arch, p);
  } else {
    // A device newer than NVRTC (PTX for an older arch): the guess was no request of its own,
    // so its miss does not count.
    if (im.store && !im.config.always_compile) im.store->stats().misses.fetch_sub(1, std::memory_order_relaxed);
    result = im.fetch(program, arch, Impl::prepare(program, o, arch));
  }
  im.dump(program, result);
  auto key = std::make_pair(result.key, dev.ordinal());
  {
    std::shared_lock lock(im.registry_mutex);
    if (auto it = im.by_key.find(key); it != im.by_key.end()) {
      Module m = it->second;
      lock.unlock();
      std::unique_lock wlock(im.registry_mutex);
      im.by_request.emplace(rh, m);
      return m;
    }
  }
  Module loaded(std::move(result), dev);
  std::unique_lock lock(im.registry_mutex);
  auto [it, inserted] = im.by_key.emplace(key, loaded);
  im.by_request.emplace(rh, it->second);
  return it->second;
}

Arch Runtime::resolve(const Arch& arch, std::optional<Device> device) const {
  return m_impl->resolve(arch, device);
}

Runtime::KeyExplanation Runtime::explain(const Program& program, const CompileOptions& options) {
  CompileOptions o = normalized(options);
  Arch arch = m_impl->resolve(o.arch, std::nullopt);
  auto flags = runtime::marshal(o, arch);
  auto key = runtime::CacheKey::compute(program, flags, arch, o.include_dirs, program.directory(),
                                       cache::Hasher::Fields::keep);
  KeyExplanation out;
  out.key = key.key.hex();
  for (const auto& f : key.fields) out.fields.emplace_back(f.label, f.value);
  return out;
}

const RuntimeConfig& Runtime::config() const { return m_impl->config; }
std::filesystem::path Runtime::cache_dir() const { return m_impl->cache_dir; }

RuntimeStats Runtime::stats() const {
  const Impl& im = *m_impl;
  RuntimeStats s;
  s.registry_hits = im.registry_hits;
  s.disk_hits = im.disk_hits;
  s.misses = im.misses;
  s.compiles = im.compiles;
  s.waits = im.waits;
  s.damaged = im.damaged;
  s.store_failures = im.store_failures;
  if (im.store) s.evictions = im.store->stats().snapshot().evictions;
  return s;
}

void Runtime::flush_stats() { m_impl->flush(); }
void Runtime::report(std::string_view message) const { m_impl->deliver(LogLevel::info, message); }

std::string nvrtc_version() { return runtime::NvrtcCompiler::version(); }
std::vector<int> supported_archs() { return runtime::NvrtcCompiler::supported_archs(); }
std::string_view version() { return KJIT_VERSION; }

}  // namespace kjit
