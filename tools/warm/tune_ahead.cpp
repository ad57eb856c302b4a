// kjit::tune_ahead: one TunerEngine per (kernel, variant, tuning entry) over the request the
// source loader makes, launched once per listed shape with made-up arguments; with a shard, only
// the shapes whose decision key goes to it.
#include <kjit/device.hpp>
#include <kjit/error.hpp>
#include <kjit/loader.hpp>
#include <kjit/manifest.hpp>
#include <kjit/tools/tune_ahead.hpp>

#include "core/base/source_file.hpp"
#include "core/loader/kernel_request.hpp"
#include "core/tune/report.hpp"
#include "core/tune/synthetic_arguments.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <memory>
#include <optional>

namespace kjit {

TuneAheadReport tune_ahead(const TuneAheadOptions& options, const TuneAheadProgress& progress) {
  const auto started = std::chrono::steady_clock::now();
  const auto [manifests, roots] = loader::read_manifests(options.sources, "tuning");
  std::size_t shapes = 0;
  for (const auto& m : manifests) {
    for (const auto& k : m->kernels()) {
      for (const auto& t : k.tuning) shapes += t.shapes.size();
    }
  }
  if (shapes == 0) {
    std::vector<std::string> paths;
    for (const auto& m : manifests) paths.push_back(m->path().string());
    throw UsageError(fmt::format("tuning ahead of time: no \"tuning\" entry of {} lists \"shapes\" to decide",
                                 fmt::join(paths, ", ")));
  }
  if (!driver_available()) {
    throw DriverNotFoundError(fmt::format("tuning ahead of time: kjit tune times kernels on a GPU, and there is no "
                                          "CUDA driver here ({})",
                                          driver_unavailable_reason()));
  }
  if (options.device < 0 || options.device >= device_count()) {
    throw UsageError(fmt::format("tuning ahead of time on device {}: this machine has {} CUDA device{}",
                                 options.device, device_count(), device_count() == 1 ? "" : "s"));
  }
  const Device device = Device::get(options.device);
  device.make_current();

  Runtime rt(options.runtime);
  KernelLoader loader(LoaderOptions{.folders = roots}, rt);  // the search path a loader over these roots has
  TuneAheadReport report;
  report.device = device.name();
  report.shard = options.shard;
  report.cache_dir = rt.cache_dir();
  const long long sms = device.multiprocessor_count();

  for (const auto& m : manifests) {
    const auto root = m->dir();
    for (const auto& k : m->kernels()) {
      if (k.tuning.empty()) continue;
      for (const auto& v : k.variants) {
        for (const auto& spec : k.tuning) {
          if (spec.shapes.empty()) continue;
          const tune::CompiledSpec compiled(spec);  // checked when the manifest was read
          std::unique_ptr<TunerEngine> engine;
          std::string setup_error;
          try {
            auto req = loader::make_kernel_request(root, k.file, base::read_text_file(root / k.file, "kernel file"), &k,
                                                   v.name, loader.search_path(), CompileOptions{});
            TuneOptions t = options.tuning;
            t.compile = req.options;
            t.mode = options.force ? TuneMode::force : TuneMode::on;
            t.print = false;
            engine = std::make_unique<TunerEngine>(std::move(req.program), spec, std::move(t), rt);
          } catch (const std::exception& e) {
            setup_error = e.what();
          }
          for (const auto& shape : compiled.shapes()) {
            if (engine && !options.shard.whole()) {
              // Another shard's decision (by its key), unless the key cannot be made: then every
              // shard tries it and reports what failed.
              std::optional<bool> mine;
              try {
                mine = options.shard.owns(engine->decision_key(shape));
              } catch (const std::exception&) {
              }
              if (mine && !*mine) {
                ++report.elsewhere;
                continue;
              }
            }
            const auto t0 = std::chrono::steady_clock::now();
            TuneAheadItem item{m->path(), k.file, v.name, spec.name, tune::CompiledSpec::shape_text(shape), {}, report.device,
                               {}, {}, 0};
            try {
              if (!engine) throw Error(setup_error);
              item.key = engine->key_for(shape).text();
              tune::SyntheticArguments args(compiled, shape, sms, 0x6b6a6974 + report.items.size());
              item.decision = engine->launch(shape, nullptr, args.pointers());
              device.synchronize();  // a fault of the winner's launch shows here, in its item
            } catch (const std::exception& e) {
              item.decision.reset();
              item.error = e.what();
            }
            item.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            if (item.decision) {
              const std::string what = fmt::format("{}{}: {}", item.file,
                                                   item.variant.empty() ? "" : fmt::format(" [{}]", item.variant), item.name);
              const std::string key = item.key == item.shape
                                          ? item.key
                                          : fmt::format("{} (key {})", item.shape, item.key.empty() ? "-" : item.key);
              item.report = fmt::format("{}\n  in {:.0f} ms", format_decision(what, key, item.device, *item.decision),
                                        item.ms);
            }
            if (!item.decision) ++report.failed;
            else if (item.decision->source == TuneDecision::Source::timed) ++report.timed;
            else ++report.cached;
            if (progress) progress(item);
            report.items.push_back(std::move(item));
          }
        }
      }
    }
  }
  rt.flush_stats();
  report.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return report;
}

}  // namespace kjit
