// kjit tune: decide the shapes listed in kernel manifests' "tuning" entries on this GPU.
#include "commands.hpp"

#include <kjit/tools/tune_ahead.hpp>
#include <kjit/loader.hpp>
#include <kjit/tune.hpp>

#include <nlohmann/json.hpp>

namespace kjit::cli {
namespace {

struct TuneArgs {
  std::vector<std::string> sources;
  int device = 0;
  bool force = false;
  std::string shard;  // --shard I/N | auto | auto/N
};

std::string what(const TuneAheadItem& i) {
  return fmt::format("{}{}: {}", i.file, i.variant.empty() ? "" : fmt::format(" [{}]", i.variant), i.name);
}

nlohmann::json item_json(const TuneAheadItem& i) {
  nlohmann::json j{{"manifest", i.manifest.string()}, {"file", i.file},   {"variant", i.variant},
                   {"name", i.name},                  {"shape", i.shape}, {"tuning_key", i.key},
                   {"ms", i.ms}};
  if (i.decision) {
    const TuneDecision& d = *i.decision;
    j["status"] = d.source == TuneDecision::Source::timed ? "timed" : "cached";
    j["chosen"] = d.chosen;
    j["label"] = d.label;
    nlohmann::json candidates = nlohmann::json::array();
    for (std::size_t c = 0; c < d.labels.size(); ++c) {
      candidates.push_back({{"label", d.labels[c]},
                            {"median_us", d.median_us[c] >= 0 ? nlohmann::json(d.median_us[c]) : nlohmann::json()},
                            {"why_not", d.why_not[c]}});
    }
    j["candidates"] = candidates;
    j["noise"] = d.noise;
    j["key"] = d.key;
  } else {
    j["status"] = "failed";
    j["error"] = i.error;
  }
  return j;
}

}  // namespace

void add_tune_command(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<TuneArgs>();
  auto* tune = app.add_subcommand("tune", "Decide the shapes of kernel manifests' \"tuning\" entries on this GPU and "
                                          "cache the decisions");
  tune->add_option("sources", args->sources,
                   "Folders holding a kjit.json, or manifest files (default: the installed kernels_src)");
  tune->add_option("--device", args->device, "The CUDA device to time on")->capture_default_str();
  tune->add_flag("--force", args->force, "Time again where a decision is cached (as KJIT_TUNE=force)");
  tune->add_option("--shard", args->shard,
                   "Decide only shard I of N (I/N, from 0), by each decision's cache key; auto: from "
                   "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT, JOB_COMPLETION_INDEX (auto/N) or RANK/WORLD_SIZE");
  tune->footer(
      "Each tuning entry (its candidates, key, grid, arguments and shapes; see docs/manifest.md) is timed for each listed shape "
      "and each variant of its kernel, on made-up arguments, as a program's KernelLoader::tuner<Sig>(file, name) "
      "would time it; the decision goes into the cache (and the remote cache with --remote), where that tuner finds "
      "it without timing. Prints, per shape, the candidates with their median times (* the chosen one; a candidate "
      "within the noise of the fastest ties, and a tie goes to the earlier one) and why any was left out, then a "
      "total. `kjit cache ls --tuning` lists the stored decisions. Exit codes: 0 every shape decided, 1 a shape "
      "failed (every candidate failed, or a bad count), 2 usage (bad manifest, no tuning entry with shapes, unknown "
      "device, bad --shard), 3 no CUDA driver.");
  tune->callback([&ctx, args] {
    TuneAheadOptions o;
    for (const auto& s : args->sources) o.sources.emplace_back(s);
    o.device = args->device;
    o.force = args->force;
    o.runtime = ctx.runtime_config();
    if (!args->shard.empty()) o.shard = Shard::parse(args->shard);
    if (!o.shard.whole() && !ctx.quiet) fmt::print(stderr, "kjit: tune: shard {} ({})\n", o.shard.str(), o.shard.source());
    const TuneAheadProgress progress = [&](const TuneAheadItem& i) {
      if (ctx.json || ctx.quiet) return;
      if (!i.report.empty()) fmt::print("{}\n", i.report);
      std::fflush(stdout);
    };
    const TuneAheadReport r = kjit::tune_ahead(o, progress);
    if (ctx.json) {
      nlohmann::json items = nlohmann::json::array();
      for (const auto& i : r.items) items.push_back(item_json(i));
      print_json(nlohmann::json{{"items", items},
                                        {"timed", r.timed},
                                        {"cached", r.cached},
                                        {"failed", r.failed},
                                        {"wall_ms", r.wall_ms},
                                        {"device", r.device},
                                        {"cache_dir", r.cache_dir.string()},
                                        {"shard", {{"index", r.shard.index()}, {"count", r.shard.count()},
                                                   {"from", r.shard.source()}, {"elsewhere", r.elsewhere}}}});
    } else {
      if (!ctx.quiet) {
        fmt::print("total: {} shape{}: {} timed, {} already decided, {} failed in {:.1f} s (on {}, cache {}{})\n",
                   r.items.size(), r.items.size() == 1 ? "" : "s", r.timed, r.cached, r.failed, r.wall_ms / 1000.0,
                   r.device, r.cache_dir.string(),
                   r.shard.whole() ? "" : fmt::format(", shard {}: {} shapes are other shards'", r.shard.str(), r.elsewhere));
      }
      for (const auto& i : r.items) {
        if (!i.decision) fmt::print(stderr, "kjit: error: tuning {} for {}: {}\n", what(i), i.shape, i.error);
      }
    }
    if (!r.ok()) ctx.exit_code = k_exit_failed;
  });
}

}  // namespace kjit::cli
