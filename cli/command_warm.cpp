// kjit warm: compile every kernel x variant x arch of kernel manifests into the cache.
#include "commands.hpp"

#include <kjit/tools/warm.hpp>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <thread>

namespace kjit::cli {
namespace {

struct WarmArgs {
  std::vector<std::string> sources;
  std::string arch = "native";
  unsigned jobs = 0;
  bool no_pch = false;
  std::string shard;   // --shard I/N | auto | auto/N
  std::string bundle;  // --bundle FILE
};

std::vector<Arch> parse_archs(const std::string& list) {
  std::vector<Arch> out;
  std::size_t pos = 0;
  while (pos <= list.size()) {
    auto comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    if (comma > pos) out.push_back(Arch::parse(list.substr(pos, comma - pos)));
    pos = comma + 1;
  }
  if (out.empty()) throw UsageError(fmt::format("--arch \"{}\": expected sm_80,sm_90,... or native", list));
  return out;
}

std::string variant_label(const WarmItem& item) { return item.variant.empty() ? "-" : item.variant; }

void print_table(const WarmReport& r) {
  std::size_t wk = 6, wv = 7;
  for (const auto& i : r.items) {
    wk = std::max(wk, i.file.size());
    wv = std::max(wv, variant_label(i).size());
  }
  fmt::print("{:<{}}  {:<{}}  {:<10}  {:<8}  {:<7}  {:>10}\n", "kernel", wk, "variant", wv, "arch", "status", "pch",
             "time");
  for (const auto& i : r.items) {
    fmt::print("{:<{}}  {:<{}}  {:<10}  {:<8}  {:<7}  {:>7.0f} ms\n", i.file, wk, variant_label(i), wv, i.arch.str(),
               to_string(i.status), to_string(i.pch), i.ms);
  }
  fmt::print("total: {} item{}: {} compiled, {} already cached, {} failed in {:.1f} s (-j {}, cache {}{})\n",
             r.items.size(), r.items.size() == 1 ? "" : "s", r.compiled, r.cached, r.failed, r.wall_ms / 1000.0, r.jobs,
             r.cache_dir.string(),
             r.shard.whole() ? "" : fmt::format(", shard {}: {} items are other shards'", r.shard.str(), r.elsewhere));
  if (r.bundle) {
    fmt::print("bundle: {} entr{} ({}) in {}\n", r.bundle->bundle.entries, r.bundle->bundle.entries == 1 ? "y" : "ies",
               r.bundle->bundle.signature == "none" ? std::string("unsigned") : "signed " + r.bundle->bundle.signature,
               r.bundle->file.string());
  }
}

}  // namespace

void add_warm_command(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<WarmArgs>();
  auto* warm = app.add_subcommand("warm", "Compile every kernel x variant x arch of kernel manifests into the cache");
  warm->add_option("sources", args->sources,
                   "Folders holding a kjit.json, or manifest files (default: the installed kernels_src)");
  warm->add_option("--arch", args->arch, "Comma-separated archs (sm_80,sm_90,...), or native (needs a GPU)")
      ->capture_default_str();
  warm->add_option("-j,--jobs", args->jobs, "NVRTC compiles at once (default: the number of cores)");
  warm->add_flag("--no-pch", args->no_pch, "Do not use NVRTC precompiled headers");
  warm->add_option("--shard", args->shard,
                   "Warm only shard I of N (I/N, from 0), by each item's cache key; auto: from SLURM_ARRAY_TASK_ID/"
                   "SLURM_ARRAY_TASK_COUNT, JOB_COMPLETION_INDEX (auto/N) or RANK/WORLD_SIZE");
  warm->add_option("--bundle", args->bundle,
                   "Then write the entries of the items warmed into this bundle (signed as cache export signs), "
                   "for kjit cache bundle merge");
  warm->footer("Prints progress on stderr (one updating line on a terminal, a line per item otherwise), then on "
               "stdout a table per kernel, variant and arch: compiled, cached (already in the cache) or failed, "
               "whether the compile created or used a precompiled header (pch), and the time. Each failure is "
               "printed with NVRTC's log and the source excerpt. Exit codes: 0 all warm, 1 something failed to "
               "compile or a manifest or source cannot be read, 2 usage (bad manifest, unknown arch, bad --shard), 3 "
               "could not run (native without a GPU). With --shard, the shard and where it came from are said on "
               "stderr; the shards of one manifest and arch list split its items, each item to one shard, the same "
               "on every machine (docs/sharding.md).");
  warm->callback([&ctx, args] {
    WarmOptions o;
    for (const auto& s : args->sources) o.sources.emplace_back(s);
    o.archs = parse_archs(args->arch);
    o.jobs = args->jobs;
    o.precompiled_headers = !args->no_pch;
    o.runtime = ctx.runtime_config();
    if (!args->shard.empty()) o.shard = Shard::parse(args->shard);
    o.bundle = args->bundle;
    ctx.input = args->bundle;
    if (!o.shard.whole() && !ctx.quiet) {
      fmt::print(stderr, "kjit: warm: shard {} ({})\n", o.shard.str(), o.shard.source());
    }

    // Progress is a diagnostic: on stderr (one updating line when that is a terminal), so that
    // stdout carries the table or the JSON alone.
    const bool bar = !ctx.json && !ctx.quiet && isatty(STDERR_FILENO) == 1;
    const bool lines = !ctx.json && !ctx.quiet && !bar;
    WarmProgress progress = [&](const WarmEvent& e) {
      if (e.kind != WarmEvent::Kind::finished) return;
      const WarmItem& i = e.item;
      if (bar) {
        constexpr std::size_t width = 30;
        std::size_t filled = e.total ? e.finished * width / e.total : width;
        fmt::print(stderr, "\r[{:#<{}}{:.<{}}] {}/{}  {} {} {}\x1b[K", "", filled, "", width - filled, e.finished,
                   e.total, i.file, variant_label(i), i.arch.str());
        if (e.finished == e.total) fmt::print(stderr, "\n");
        std::fflush(stderr);
      } else if (lines) {
        fmt::print(stderr, "[{}/{}] {} {} {} {} {:.0f} ms{}\n", e.finished, e.total, to_string(i.status), i.file,
                   variant_label(i), i.arch.str(), i.ms,
                   i.pch == PchUse::none ? "" : fmt::format(" (pch {})", to_string(i.pch)));
      }
    };
    WarmReport r = kjit::warm(o, progress);
    if (ctx.json) {
      nlohmann::json items = nlohmann::json::array();
      for (const auto& i : r.items) {
        items.push_back({{"manifest", i.manifest.string()}, {"file", i.file}, {"variant", i.variant},
                         {"arch", i.arch.str()}, {"status", std::string(to_string(i.status))},
                         {"pch", i.pch == PchUse::none ? "" : std::string(to_string(i.pch))}, {"ms", i.ms},
                         {"key", i.key}, {"error", i.error}});
      }
      nlohmann::json j{{"items", items}, {"compiled", r.compiled}, {"cached", r.cached}, {"failed", r.failed},
                       {"wall_ms", r.wall_ms}, {"jobs", r.jobs}, {"cache_dir", r.cache_dir.string()},
                       {"shard", {{"index", r.shard.index()}, {"count", r.shard.count()},
                                  {"from", r.shard.source()}, {"elsewhere", r.elsewhere}}}};
      if (r.bundle) {
        j["bundle"] = {{"file", json_name(r.bundle->file.string())}, {"entries", r.bundle->bundle.entries},
                       {"bytes", r.bundle->bundle.bytes}, {"generation", r.bundle->bundle.generation},
                       {"signature", r.bundle->bundle.signature}, {"missing", r.bundle->missing}};
      } else {
        j["bundle"] = nullptr;
      }
      print_json(j);
    } else {
      if (!ctx.quiet) print_table(r);
      for (const auto& i : r.items) {
        if (i.status == WarmStatus::failed) {
          fmt::print(stderr, "kjit: error: warming {} [{}] for {}: {}\n", i.file, variant_label(i), i.arch.str(),
                     i.error);
        }
      }
    }
    if (r.bundle && !r.bundle->missing.empty()) {
      fmt::print(stderr, "kjit: error: the bundle {} lacks {} of the entries warmed, gone from the cache since "
                         "(evicted: raise KJIT_CACHE_MAX_SIZE), e.g. {}\n",
                 r.bundle->file.string(), r.bundle->missing.size(), r.bundle->missing.front());
    }
    if (!r.ok()) ctx.exit_code = k_exit_different;
  });
}

}  // namespace kjit::cli
