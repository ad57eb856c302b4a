// kjit::warm: a small pool of threads (NVRTC compiles in parallel across threads of one
// process; measured in bench/warm) taking kernel x variant x arch items in manifest order.
#include <kjit/error.hpp>
#include <kjit/loader.hpp>
#include <kjit/manifest.hpp>
#include <kjit/tools/warm.hpp>

#include "core/spi/base.hpp"
#include "core/spi/loader.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
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

}  // namespace

WarmReport warm(const WarmOptions& options, const WarmProgress& progress) {
  auto started = std::chrono::steady_clock::now();
  RuntimeConfig config = options.runtime;
  config.precompiled_headers = options.precompiled_headers;
  Runtime rt(config);

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
  KernelLoader loader(LoaderOptions{.folders = roots}, rt);
  const auto& search_path = loader.search_path();

  std::vector<Work> work;
  for (const auto& m : manifests) {
    for (const auto& k : m->kernels()) {
      for (const auto& v : k.variants) {
        for (const auto& a : archs) work.push_back({m, &k, v.name, a});
      }
    }
  }

  WarmReport report;
  report.jobs = options.jobs ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  report.cache_dir = rt.cache_dir();
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
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t k; (k = next++) < work.size();) {
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
        auto root = w.manifest->dir();
        auto req = loader::make_kernel_request(root, w.kernel->file, base::read_text_file(root / w.kernel->file, "kernel file"), w.kernel,
                                                w.variant, search_path, CompileOptions{});
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
    }
  };
  std::vector<std::thread> threads;
  auto n = static_cast<unsigned>(std::min<std::size_t>(report.jobs, std::max<std::size_t>(work.size(), 1)));
  for (unsigned t = 0; t < n; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();

  for (const auto& item : report.items) {
    switch (item.status) {
    case WarmStatus::compiled: ++report.compiled; break;
    case WarmStatus::cached: ++report.cached; break;
    case WarmStatus::failed: ++report.failed; break;
    }
  }
  rt.flush_stats();
  report.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return report;
}

}  // namespace kjit
