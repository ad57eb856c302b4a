// kjit::warm: a small pool of threads (NVRTC compiles in parallel across threads of one
// process; measured in bench/warm) taking kernel x variant x arch items in manifest order; with a
// shard, a first pass (the same pool) computes every item's cache key and keeps the shard's; with
// a bundle, the entries of the items warmed go into it once the Runtime has finished its writes.
#include <kjit/error.hpp>
#include <kjit/loader.hpp>
#include <kjit/manifest.hpp>
#include <kjit/tools/cache.hpp>
#include <kjit/tools/warm.hpp>

#include "core/base/source_file.hpp"
#include "core/loader/kernel_request.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

namespace kjit {

std::string_view to_string(WarmStatus status) {
  switch (status) {
  case WarmStatus::compiled: return "compiled";
  case WarmStatus::cached: return "cached";
  case WarmStatus::failed: return "failed";
  }
  return "?";
}

namespace {

struct Work {
  std::shared_ptr<const Manifest> manifest;
  const ManifestKernel* kernel = nullptr;
  std::string variant;
  Arch arch;
};

// `body(i)` for i in [0, n) on at most `threads` threads, each taking the next index.
void parallel_for(std::size_t n, unsigned threads, const std::function<void(std::size_t)>& body) {
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next++) < n;) body(i);
  };
  std::vector<std::thread> pool;
  const auto count = static_cast<unsigned>(std::min<std::size_t>(threads, std::max<std::size_t>(n, 1)));
  for (unsigned t = 1; t < count; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

}  // namespace

WarmReport warm(const WarmOptions& options, const WarmProgress& progress) {
  auto started = std::chrono::steady_clock::now();
  RuntimeConfig config = options.runtime;
  config.precompiled_headers = options.precompiled_headers;
  if (!options.bundle.empty() && config.cache_disabled) {
    throw UsageError(fmt::format("warming into the bundle {}: the bundle is made from the disk cache, and it is "
                                 "disabled (KJIT_CACHE_DISABLE)",
                                 options.bundle.string()));
  }
  WarmReport report;
  std::optional<Runtime> runtime(std::in_place, config);
  Runtime& rt = *runtime;

  const auto [manifests, roots] = loader::read_manifests(options.sources, "warming");

  std::vector<Arch> archs;
  for (const Arch& a : options.archs.empty() ? std::vector<Arch>{Arch::native()} : options.archs) {
    Arch resolved = Arch::sm(0);
    try {
      resolved = rt.resolve(a);
    } catch (const UsageError&) {
      throw;
    } catch (const Error& e) {  // no driver or no device: the command cannot run here as asked
      throw DriverNotFoundError(fmt::format("warming for the native arch: {}; name the archs to warm without a GPU "
                                            "(kjit warm --arch sm_80,sm_90)", e.what()));
    }
    if (std::find(archs.begin(), archs.end(), resolved) == archs.end()) archs.push_back(resolved);
  }

  // The search path a loader over these roots has (KJIT_KERNEL_PATH, the roots, installed).
  std::optional<KernelLoader> loader(std::in_place, LoaderOptions{.folders = roots}, rt);
  const std::vector<std::filesystem::path> search_path = loader->search_path();

  std::vector<Work> work;
  for (const auto& m : manifests) {
    for (const auto& k : m->kernels()) {
      for (const auto& v : k.variants) {
        for (const auto& a : archs) work.push_back({m, &k, v.name, a});
      }
    }
  }
  // Each item's request, as KernelLoader makes it.
  auto request_of = [&](const Work& w) {
    const auto root = w.manifest->dir();
    return loader::make_kernel_request(root, w.kernel->file, base::read_text_file(root / w.kernel->file, "kernel file"),
                                       w.kernel, w.variant, search_path, CompileOptions{});
  };

  report.jobs = options.jobs ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  report.cache_dir = rt.cache_dir();
  report.shard = options.shard;
  if (!options.shard.whole()) {
    // The shard's items, by their keys. An item whose key cannot be made (its file unreadable)
    // stays in every shard, so that each reports the failure rather than none.
    std::vector<char> mine(work.size(), 1);
    parallel_for(work.size(), report.jobs, [&](std::size_t i) {
      try {
        auto req = request_of(work[i]);
        mine[i] = options.shard.owns(rt.explain(req.program, req.options.with_arch(work[i].arch)).key);
      } catch (const std::exception&) {
        mine[i] = 1;
      }
    });
    std::vector<Work> kept;
    for (std::size_t i = 0; i < work.size(); ++i) {
      if (mine[i]) kept.push_back(std::move(work[i]));
    }
    report.elsewhere = work.size() - kept.size();
    work = std::move(kept);
  }
  report.items.resize(work.size());
  std::mutex progress_mutex;
  std::size_t finished = 0, running = 0;
  auto notify = [&](WarmEvent::Kind kind, const WarmItem& item) {
    std::lock_guard lock(progress_mutex);
    if (kind == WarmEvent::Kind::started) {
      ++running;
    } else {
      --running;
      ++finished;
    }
    if (progress) progress(WarmEvent{kind, item, finished, work.size(), running});
  };

  // Warmers that share a remote cache (several CI machines, a fleet's nodes) start at different
  // points of the list, so that they split the compiles instead of waiting on the same keys.
  const std::size_t start =
      options.runtime.remote_cache.empty() || work.empty() ? 0 : std::random_device{}() % work.size();
  parallel_for(work.size(), report.jobs, [&](std::size_t k) {
    const std::size_t i = (start + k) % work.size();
    const Work& w = work[i];
    WarmItem& item = report.items[i];
    item.manifest = w.manifest->path();
    item.file = w.kernel->file;
    item.variant = w.variant;
    item.arch = w.arch;
    notify(WarmEvent::Kind::started, item);
    auto t0 = std::chrono::steady_clock::now();
    try {
      auto req = request_of(w);
      CompileResult r = rt.compile(req.program, req.options.with_arch(w.arch));
      item.status = r.outcome == Outcome::compiled ? WarmStatus::compiled : WarmStatus::cached;
      item.pch = r.pch;
      item.key = r.key;
    } catch (const std::exception& e) {
      item.status = WarmStatus::failed;
      item.error = e.what();
    }
    item.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    notify(WarmEvent::Kind::finished, item);
  });

  for (const auto& item : report.items) {
    switch (item.status) {
    case WarmStatus::compiled: ++report.compiled; break;
    case WarmStatus::cached: ++report.cached; break;
    case WarmStatus::failed: ++report.failed; break;
    }
  }
  rt.flush_stats();
  if (!options.bundle.empty()) {
    // The Runtime's writes finished first (a remote hit reaches the disk on its worker).
    loader.reset();
    runtime.reset();
    CacheExportOptions o;
    for (const auto& item : report.items) {
      if (!item.key.empty()) o.only_keys.push_back(item.key);
    }
    o.keys = BundleKeys{config.remote_secret_file, config.remote_signing_key_file, config.remote_public_key_file};
    report.bundle = Cache(report.cache_dir, config.cache_max_size, config.cache_shared).export_bundle(options.bundle, o);
  }
  report.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return report;
}

}  // namespace kjit
