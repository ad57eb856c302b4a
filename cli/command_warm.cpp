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
  fmt::print("total: {} item{}: {} compiled, {} already cached, {} failed in {:.1f} s (-j {}, cache {})\n",
             r.items.size(), r.items.size() == 1 ? "" : "s", r.compiled, r.cached, r.failed, r.wall_ms / 1000.0, r.jobs, r.cache_dir.string());
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
  warm->footer("Prints progress on stderr (one updating line on a terminal, a line per item otherwise), then on "
               "stdout a table per kernel, variant and arch: compiled, cached (already in the cache) or failed, "
               "whether the compile created or used a precompiled header (pch), and the time. Each failure is "
               "printed with NVRTC's log and the source excerpt. Exit codes: 0 all warm, 1 something failed to "
               "compile or a manifest or source cannot be read, 2 usage (bad manifest, unknown arch), 3 could not "
               "run (native without a GPU).");
  warm->callback([&ctx, args] {
    WarmOptions o;
    for (const auto& s : args->sources) o.sources.emplace_back(s);
    o.archs = parse_archs(args->arch);
    o.jobs = args->jobs;
    o.precompiled_headers = !args->no_pch;
    o.runtime = ctx.runtime_config();

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
                       {"wall_ms", r.wall_ms}, {"jobs", r.jobs}, {"cache_dir", r.cache_dir.string()}};
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
    if (!r.ok()) ctx.exit_code = k_exit_different;
  });
}

}  // namespace kjit::cli
