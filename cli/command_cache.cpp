// kjit cache stats | ls | verify | prune | clear | explain | export | import | bundle merge | keygen.
#include "commands.hpp"

#include <kjit/tools/cache.hpp>

#include <fmt/chrono.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>

namespace kjit::cli {
namespace {

std::string human(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

// "1 entry", "2 entries".
std::string entries(std::uint64_t n) { return fmt::format("{} entr{}", n, n == 1 ? "y" : "ies"); }

Cache open_cache(Context& ctx) {
  Runtime& rt = ctx.runtime();
  return Cache(rt.cache_dir(), rt.config().cache_max_size, rt.config().cache_shared);
}

std::int64_t epoch_seconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

using Skipped = std::vector<std::pair<std::filesystem::path, std::string>>;

nlohmann::json skipped_json(const Skipped& skipped) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [path, why] : skipped) out.push_back({{"path", json_name(path.string())}, {"reason", why}});
  return out;
}

// A symbolic link inside the cache, left alone: one warning line each, whatever the output form.
void warn_skipped(const Skipped& skipped) {
  for (const auto& [path, why] : skipped) fmt::print(stderr, "kjit: warning: skipped {}: {}\n", path.string(), why);
}

// Files a command meant to remove and could not (a read-only cache): one line each on stderr,
// and the command exits 1, whatever the output form.
void report_not_removed(Context& ctx, const Skipped& not_removed) {
  for (const auto& [path, why] : not_removed) {
    fmt::print(stderr, "kjit: error: could not remove {} ({})\n", path.string(), why);
  }
  if (!not_removed.empty()) ctx.exit_code = std::max(ctx.exit_code, k_exit_failed);
}

nlohmann::json prune_json(const CachePruneResult& p) {
  return {{"removed_entries", p.removed_entries}, {"removed_bytes", p.removed_bytes},
          {"kept_entries", p.kept_entries}, {"kept_bytes", p.kept_bytes}, {"skipped", skipped_json(p.skipped)},
          {"not_removed", skipped_json(p.not_removed)}};
}

void add_stats(CLI::App& cache, Context& ctx) {
  cache.add_subcommand("stats", "Counters summed over every process, entries and bytes (remote tier included)")
      ->callback([&ctx] {
        CacheStats s = open_cache(ctx).stats();
        const std::uint64_t avg_us = s.remote_requests ? s.remote_latency_us / s.remote_requests : 0;
        if (ctx.json) {
          nlohmann::json remote{{"url", redact_remote_url(ctx.runtime().config().remote_cache)},
                                {"requests", s.remote_requests}, {"hits", s.remote_hits},
                                {"misses", s.remote_misses}, {"rejected", s.remote_rejected},
                                {"errors", s.remote_errors}, {"timeouts", s.remote_timeouts},
                                {"writes", s.remote_writes}, {"dropped", s.remote_dropped},
                                {"bytes_read", s.remote_bytes_read}, {"bytes_written", s.remote_bytes_written},
                                {"latency_us_total", s.remote_latency_us}, {"latency_us_mean", avg_us},
                                {"http_hits", s.remote_http_hits}, {"http_errors", s.remote_http_errors},
                                {"backfills", s.remote_backfills}, {"shard_down", s.remote_shard_down}};
          print_json(nlohmann::json{{"dir", json_name(s.dir.string())}, {"entries", s.entries}, {"bytes", s.bytes},
                                            {"max_size", s.max_size}, {"hits", s.hits}, {"misses", s.misses},
                                            {"compiles", s.compiles}, {"waits", s.waits}, {"damaged", s.damaged},
                                            {"evictions", s.evictions}, {"bytes_written", s.bytes_written},
                                            {"bytes_read", s.bytes_read}, {"store_failures", s.store_failures},
                                            {"remote", remote}}, 2);
          return;
        }
        fmt::print("cache dir       {}\nentries         {}\nsize            {} of {}\nhits            {}\n"
                   "misses          {}\ncompiles        {}\nwaits           {}\ndamaged         {}\n"
                   "evictions       {}\nbytes written   {}\nbytes read      {}\nstore failures  {}\n",
                   s.dir.string(), s.entries, human(s.bytes), s.max_size ? human(s.max_size) : "unlimited", s.hits,
                   s.misses, s.compiles, s.waits, s.damaged, s.evictions, human(s.bytes_written),
                   human(s.bytes_read), s.store_failures);
        fmt::print("remote          {} requests: {} hits, {} misses ({} rejected, {} shard down), {} errors ({} "
                   "timeouts), mean {} us\nremote writes   {} sent ({} backfills), {} dropped; {} read, {} written\n"
                   "remote http     {} hits, {} errors\n",
                   s.remote_requests, s.remote_hits, s.remote_misses, s.remote_rejected, s.remote_shard_down,
                   s.remote_errors, s.remote_timeouts, avg_us, s.remote_writes, s.remote_backfills, s.remote_dropped,
                   human(s.remote_bytes_read), human(s.remote_bytes_written), s.remote_http_hits,
                   s.remote_http_errors);
      });
}

void add_remote(CLI::App& cache, Context& ctx) {
  auto* remote = cache.add_subcommand("remote", "The remote cache tier (--remote or KJIT_REMOTE_CACHE)");
  remote->require_subcommand(1);
  remote->fallthrough();
  remote->add_subcommand("ping", "One round trip to each server of the remote cache (each shard, each HTTP level): "
                                  "what answers, how fast, whether it refuses writes (exit 1 if any does not answer)")
      ->callback([&ctx] {
        const RuntimeConfig config = ctx.runtime_config();  // the remote only: no disk cache is opened
        const std::string url = config.remote_cache;
        if (url.empty()) {
          throw UsageError("no remote cache to ping: give --remote redis://host:port or set KJIT_REMOTE_CACHE");
        }
        const RemotePing p = ping_remote_cache(url, config.remote_timeout, config.remote_http_auth_file);
        if (!p.ok) ctx.exit_code = std::max(ctx.exit_code, k_exit_failed);
        std::size_t shards = 0;
        for (const auto& server : p.servers) shards += server.shard;
        if (ctx.json) {
          nlohmann::json j{{"url", p.url}, {"ok", p.ok}, {"round_trip_us", p.round_trip.count()}};
          if (!p.server.empty()) j["server"] = p.server;
          if (!p.ok) j["error"] = {{"kind", "remote"}, {"message", p.message}};
          j["servers"] = nlohmann::json::array();
          for (const auto& server : p.servers) {
            nlohmann::json one{{"url", server.url}, {"kind", server.shard ? "shard" : "http"}, {"ok", server.ok},
                               {"round_trip_us", server.round_trip.count()}};
            if (server.shard) one["weight"] = server.weight;
            if (server.ok) {
              one["server"] = server.server;
              one["refusing_writes"] =
                  server.refusing_writes.empty() ? nlohmann::json(false) : nlohmann::json(server.refusing_writes);
            } else {
              one["error"] = {{"kind", "remote"}, {"message", server.message}};
            }
            j["servers"].push_back(std::move(one));
          }
          print_json(j, 2);
          return;
        }
        // One line a server: a shard's weight when there are several, its state.
        for (const auto& server : p.servers) {
          const std::string weight = server.shard && shards > 1 ? fmt::format(" (weight {})", server.weight) : "";
          if (server.ok) {
            fmt::print("{}{}: {}, {} us{}\n", server.url, weight, server.server, server.round_trip.count(),
                       server.refusing_writes.empty() ? "" : ", refusing writes (" + server.refusing_writes + "): reads only");
          } else {
            fmt::print("{}{}: unreachable (a node skips it for 30 s after 3 failures; its keys miss)\n", server.url,
                       weight);
            fmt::print(stderr, "kjit: error: {}\n", server.message);
          }
        }
      });
}

// kjit cache ls --tuning: the tuners' decisions.
void print_tuning_decisions(Context& ctx) {
  const auto decisions = open_cache(ctx).tuning_decisions();
  if (ctx.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& d : decisions) {
      j.push_back({{"key", d.key}, {"path", json_name(d.path.string())}, {"last_use", epoch_seconds(d.last_use)},
                   {"device", d.device}, {"name", d.name}, {"tuning_key", d.tuning_key}, {"chosen", d.chosen},
                   {"labels", d.labels}, {"median_us", d.median_us}, {"why", d.why}});
    }
    print_json(j, 2);
    return;
  }
  for (const auto& d : decisions) {
    fmt::print("{}  {}  {}  {}  {:%Y-%m-%d %H:%M:%S}\n", d.key, d.name.empty() ? "-" : d.name, d.device,
               d.tuning_key.empty() ? "-" : d.tuning_key,
               std::chrono::time_point_cast<std::chrono::seconds>(d.last_use));
    for (std::size_t i = 0; i < d.labels.size(); ++i) {
      fmt::print("  {} {:<44} {}\n", i == d.chosen ? "*" : " ", d.labels[i],
                 d.median_us[i] >= 0 ? fmt::format("{:.3f} us", d.median_us[i]) : std::string("-"));
    }
    if (!d.why.empty()) fmt::print("  why: {}\n", d.why);
  }
  fmt::print("{} decision{}\n", decisions.size(), decisions.size() == 1 ? "" : "s");
}

// kjit cache ls: the entries, most recently used first.
void print_entries(Context& ctx) {
  CacheListResult listed = open_cache(ctx).list_with_skipped();
  warn_skipped(listed.skipped);  // stderr only: the --json document stays an array of entries
  auto& entries = listed.entries;
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.last_use > b.last_use; });
  if (ctx.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& e : entries) {
      j.push_back({{"key", e.key},         {"path", json_name(e.path.string())}, {"size", e.size},
                   {"last_use", epoch_seconds(e.last_use)}, {"program", e.program}, {"arch", e.arch},
                   {"kinds", e.kinds}, {"options", e.options}, {"instantiate", e.name_expressions}});
    }
    print_json(j, 2);
    return;
  }
  // One row an entry under a header, the columns aligned; OPTIONS (less the arch, in its own column,
  // and with the name expressions) tells entries of one program and arch apart.
  std::vector<std::array<std::string, 7>> rows{{"KEY", "SIZE", "LAST USE", "PROGRAM", "ARCH", "KINDS", "OPTIONS"}};
  for (const auto& e : entries) {
    std::vector<std::string> options;
    for (const auto& o : e.options) {
      if (!o.starts_with("--gpu-architecture=")) options.push_back(o);
    }
    // The name expressions, as the CLI takes them: entries of one file, arch and flags differ by them.
    for (const auto& n : e.name_expressions) options.push_back(fmt::format("--instantiate '{}'", n));
    rows.push_back({e.key, human(e.size),
                    fmt::format("{:%Y-%m-%d %H:%M:%S}", std::chrono::time_point_cast<std::chrono::seconds>(e.last_use)),
                    e.program.empty() ? "-" : e.program, e.arch.empty() ? "-" : e.arch,
                    e.kinds.empty() ? std::string("-") : fmt::format("{}", fmt::join(e.kinds, ",")),
                    options.empty() ? std::string("-") : fmt::format("{}", fmt::join(options, " "))});
  }
  std::array<std::size_t, 7> width{};
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (const auto& row : rows) {
    // SIZE right-aligned; the last column not padded.
    fmt::print("{:<{}}  {:>{}}  {:<{}}  {:<{}}  {:<{}}  {:<{}}  {}\n", row[0], width[0], row[1], width[1], row[2],
               width[2], row[3], width[3], row[4], width[4], row[5], width[5], row[6]);
  }
  fmt::print("{}\n", cli::entries(listed.entries.size()));
}

void add_ls(CLI::App& cache, Context& ctx) {
  auto tuning = std::make_shared<bool>(false);
  auto* ls = cache.add_subcommand(
      "ls", "List entries, most recently used first, under a header row: key, size, last use, program, arch, kinds "
            "(cubin, ptx, ltoir, tuning) and the NVRTC options with the --instantiate name expressions, which tell "
            "entries of one file and arch apart");
  ls->add_flag("--tuning", *tuning, "List kjit::Tuner decisions: tuner, device, tuning key, candidates and times");
  ls->callback([&ctx, tuning] {
    if (*tuning) print_tuning_decisions(ctx);
    else print_entries(ctx);
  });
}

void add_verify(CLI::App& cache, Context& ctx) {
  cache.add_subcommand("verify", "Check every entry; damaged ones are removed (exit 1 if any)")->callback([&ctx] {
    CacheVerifyResult v = open_cache(ctx).verify();
    warn_skipped(v.skipped);
    auto kept = [&](const std::filesystem::path& path) {
      return std::any_of(v.not_removed.begin(), v.not_removed.end(), [&](const auto& n) { return n.first == path; });
    };
    if (ctx.json) {
      nlohmann::json damaged = nlohmann::json::array();
      for (const auto& [path, why] : v.damaged) {
        damaged.push_back({{"path", json_name(path.string())}, {"reason", why}, {"removed", !kept(path)}});
      }
      print_json(nlohmann::json{{"ok", v.ok}, {"damaged", damaged}, {"skipped", skipped_json(v.skipped)},
                                {"not_removed", skipped_json(v.not_removed)}},
                 2);
    } else {
      for (const auto& [path, why] : v.damaged) {
        fmt::print("damaged{}: {}: {}\n", kept(path) ? "" : " (removed)", path.string(), why);
      }
      fmt::print("{} ok, {} damaged\n", v.ok, v.damaged.size());
    }
    report_not_removed(ctx, v.not_removed);
    if (!v.damaged.empty()) ctx.exit_code = std::max(ctx.exit_code, k_exit_different);
  });
}

// An age option's value: a unit is required. A bare number is ambiguous (3 seconds? days?) and a
// wrong guess removes (prune) or leaves out (export) the whole cache.
std::optional<std::chrono::seconds> age_option(const std::string& text, std::string_view name) {
  if (text.empty()) return std::nullopt;
  if (std::isdigit(static_cast<unsigned char>(text.back()))) {
    throw UsageError(fmt::format("{} {}: give a unit: {}s, {}m, {}h or {}d", name, text, text, text, text, text));
  }
  return parse_duration(text, name);
}

void add_prune(CLI::App& cache, Context& ctx) {
  auto max_size = std::make_shared<std::string>();
  auto older_than = std::make_shared<std::string>();
  auto* prune = cache.add_subcommand("prune", "Evict least recently used entries down to a size, or old ones");
  prune->add_option("--max-size", *max_size,
                    "Keep at most this many bytes (2G, 512M, ...); 0 means no limit (nothing is removed for size); "
                    "default: the budget");
  prune->add_option("--older-than", *older_than,
                    "Remove entries unused for this long; the unit is required: 90s, 30m, 12h, 7d (over 100 years: 100 "
                    "years)");
  prune->callback([&ctx, max_size, older_than] {
    std::optional<std::uint64_t> size;
    if (!max_size->empty()) size = parse_size(*max_size, "--max-size");
    const std::optional<std::chrono::seconds> age = age_option(*older_than, "--older-than");
    CachePruneResult p = open_cache(ctx).prune(size, age);
    warn_skipped(p.skipped);
    report_not_removed(ctx, p.not_removed);
    if (ctx.json) {
      print_json(prune_json(p), 2);
    } else {
      fmt::print("removed {} ({}), kept {} ({})\n", entries(p.removed_entries), human(p.removed_bytes),
                 entries(p.kept_entries), human(p.kept_bytes));
    }
  });
}

void add_clear(CLI::App& cache, Context& ctx) {
  cache.add_subcommand("clear", "Remove every entry")->callback([&ctx] {
    CachePruneResult p = open_cache(ctx).clear();
    warn_skipped(p.skipped);
    report_not_removed(ctx, p.not_removed);
    if (ctx.json) {
      print_json(prune_json(p), 2);
    } else {
      fmt::print("removed {} ({})\n", entries(p.removed_entries), human(p.removed_bytes));
    }
  });
}

struct ExplainArgs {
  std::string file, arch;
  std::vector<std::string> flags;
};

void add_explain(CLI::App& cache, Context& ctx) {
  auto args = std::make_shared<ExplainArgs>();
  auto* explain = cache.add_subcommand("explain", "Print every field that goes into a file's cache key, and the key");
  explain->add_option("file", args->file, "CUDA source file")->required();
  explain->add_option("--arch", args->arch, "Target: native (default), sm_XX or compute_XX");
  ctx.add_instantiate_option(*explain);
  explain->add_option("flags", args->flags, "NVRTC flags, after --");
  explain->positionals_at_end(false);
  explain->callback([&ctx, args] {
    ctx.refuse_extra_words("cache explain", args->file, args->flags);
    ctx.input = args->file;
    auto e = ctx.runtime().explain(ctx.program(args->file), ctx.options(args->arch, args->flags));
    if (ctx.json) {
      nlohmann::json fields = nlohmann::json::array();
      for (const auto& [label, value] : e.fields) fields.push_back({{"field", label}, {"value", value}});
      print_json(nlohmann::json{{"file", json_name(args->file)}, {"fields", fields}, {"key", e.key}}, 2);
      return;
    }
    for (const auto& [label, value] : e.fields) fmt::print("{:<22} {}\n", label + ":", value);
    fmt::print("{:<22} {}\n", "key:", e.key);
  });
}

BundleKeys bundle_keys(const Context& ctx) {
  const RuntimeConfig c = ctx.runtime_config();
  return BundleKeys{c.remote_secret_file, c.remote_signing_key_file, c.remote_public_key_file};
}

nlohmann::json bundle_json(const CacheBundleInfo& b) {
  return {{"generation", b.generation}, {"toolkit", b.toolkit}, {"kjit_version", b.kjit_version},
          {"entries", b.entries}, {"bytes", b.bytes}, {"created", epoch_seconds(b.created)},
          {"signature", b.signature}, {"selection", b.selection}};
}

struct ExportArgs {
  std::string file, older_than, newer_than, remote_name;
  std::vector<std::string> archs;
};

// --remote-name NAME: the bundle in the fleet's HTTP or S3 store (the first entry of --remote or
// KJIT_REMOTE_CACHE whose backend keeps bundles), with its credentials file. Exactly one of FILE and NAME.
RemoteBundle remote_bundle(const Context& ctx, const std::string& file, const std::string& name) {
  if (file.empty() == name.empty()) throw UsageError("give the bundle's FILE or --remote-name NAME (one of them)");
  const RuntimeConfig c = ctx.runtime_config();
  if (c.remote_cache.empty()) {
    throw UsageError("--remote-name: no store to use: give --remote http(s)://host/prefix or s3://bucket/prefix, or set "
                     "KJIT_REMOTE_CACHE");
  }
  return RemoteBundle{c.remote_cache, name, c.remote_http_auth_file};
}

void add_export(CLI::App& cache, Context& ctx) {
  auto args = std::make_shared<ExportArgs>();
  auto* command = cache.add_subcommand(
      "export", "Write the cache's entries and tuning decisions into one signed bundle FILE (docs/bundles.md); signed "
                "with KJIT_REMOTE_SIGNING_KEY_FILE, else KJIT_REMOTE_SECRET_FILE, else unsigned");
  command->add_option("file", args->file, "The bundle to write (replaced whole)");
  command->add_option("--remote-name", args->remote_name,
                      "Instead of FILE: the bundle NAME in the fleet's HTTP or S3 store (the first http(s):// or "
                      "s3:// entry of --remote or KJIT_REMOTE_CACHE)");
  command->add_option("--arch", args->archs, "Only compile results for these archs (sm_90, repeat or comma-separated); "
                                             "tuning decisions go along")
      ->delimiter(',')
      ->allow_extra_args(false);  // one arch a flag: `--arch sm_90 FILE` leaves FILE to FILE
  command->add_option("--older-than", args->older_than, "Only entries unused for this long (90s, 30m, 12h, 7d)");
  command->add_option("--newer-than", args->newer_than, "Only entries used within this long (90s, 30m, 12h, 7d)");
  command->callback([&ctx, args] {
    CacheExportOptions o;
    o.archs = args->archs;
    o.older_than = age_option(args->older_than, "--older-than");
    o.newer_than = age_option(args->newer_than, "--newer-than");
    o.keys = bundle_keys(ctx);
    ctx.input = args->file;
    CacheExportResult r = args->remote_name.empty() && !args->file.empty()
                              ? open_cache(ctx).export_bundle(args->file, o)
                              : open_cache(ctx).export_bundle(remote_bundle(ctx, args->file, args->remote_name), o);
    const std::string where = r.remote.empty() ? r.file.string() : r.remote;
    warn_skipped(r.skipped);
    if (ctx.json) {
      print_json(nlohmann::json{{"file", r.remote.empty() ? nlohmann::json(json_name(r.file.string())) : nlohmann::json(nullptr)},
                                {"remote", r.remote.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.remote)},
                                {"file_size", r.file_size},
                                {"bundle", bundle_json(r.bundle)}, {"skipped", skipped_json(r.skipped)}},
                 2);
      return;
    }
    fmt::print("exported {} ({}) to {}: generation {}, {}\n", entries(r.bundle.entries), human(r.bundle.bytes),
               where, r.bundle.generation,
               r.bundle.signature == "none" ? std::string("unsigned") : "signed " + r.bundle.signature);
  });
}

void add_import(CLI::App& cache, Context& ctx) {
  auto file = std::make_shared<std::string>();
  auto remote_name = std::make_shared<std::string>();
  auto check = std::make_shared<bool>(false);
  auto* command = cache.add_subcommand(
      "import", "Check a bundle whole (completion marker, hash, signature, every entry), then add its entries to the "
                "cache; an import that was killed is reported and finished by the next (exit 1: refused)");
  command->add_option("file", *file, "The bundle to import");
  command->add_option("--remote-name", *remote_name,
                      "Instead of FILE: the bundle NAME in the fleet's HTTP or S3 store (as export's --remote-name)");
  command->add_flag("--check", *check, "Check the bundle whole and import nothing");
  command->callback([&ctx, file, remote_name, check] {
    CacheImportOptions o;
    o.keys = bundle_keys(ctx);
    o.check_only = *check;
    ctx.input = *file;
    CacheImportResult r = remote_name->empty() && !file->empty()
                              ? open_cache(ctx).import_bundle(*file, o)
                              : open_cache(ctx).import_bundle(remote_bundle(ctx, *file, *remote_name), o);
    const std::string what = remote_name->empty() ? *file : "bundle " + *remote_name;
    if (r.earlier && ctx.shows(LogLevel::warn)) {
      fmt::print(stderr, "kjit: warning: an earlier import into this cache did not finish: bundle {} ({}), at least {} "
                         "of {} entries written; {}\n",
                 r.earlier->generation, r.earlier->file, r.earlier->written, r.earlier->entries,
                 r.resumed ? (*check ? "importing this bundle finishes it" : "this import finishes it")
                           : "import that bundle again to finish it");
    }
    for (const auto& w : r.warnings) {
      if (ctx.shows(LogLevel::warn)) fmt::print(stderr, "kjit: warning: {}\n", w);
    }
    if (ctx.json) {
      nlohmann::json j{{"file", file->empty() ? nlohmann::json(nullptr) : nlohmann::json(json_name(*file))},
                       {"remote_name", remote_name->empty() ? nlohmann::json(nullptr) : nlohmann::json(*remote_name)},
                       {"bundle", bundle_json(r.bundle)}, {"checked", true},
                       {"imported", !*check}, {"written", r.written}, {"present", r.present},
                       {"evicted", r.evicted}, {"resumed", r.resumed}, {"warnings", r.warnings}};
      if (r.earlier) {
        j["earlier"] = {{"generation", r.earlier->generation}, {"file", json_name(r.earlier->file)},
                        {"entries", r.earlier->entries}, {"written", r.earlier->written}};
      } else {
        j["earlier"] = nullptr;
      }
      print_json(j, 2);
      return;
    }
    const std::string signature =
        r.bundle.signature == "none" ? std::string("unsigned") : "signed " + r.bundle.signature;
    if (*check) {
      fmt::print("{}: bundle {} of {} ({}), {}, NVRTC {}, kjit {}: ok\n", what, r.bundle.generation,
                 entries(r.bundle.entries), human(r.bundle.bytes), signature, r.bundle.toolkit, r.bundle.kjit_version);
      return;
    }
    fmt::print("imported bundle {} ({}): {}, {} written, {} already present\n", r.bundle.generation, signature,
               entries(r.bundle.entries), r.written, r.present);
  });
}

// kjit cache bundle merge A B ... -o ALL: one bundle of several (the shards of one warm).
void add_bundle_merge(CLI::App* bundle, Context& ctx) {
  auto inputs = std::make_shared<std::vector<std::string>>();
  auto output = std::make_shared<std::string>();
  auto* merge = bundle->add_subcommand(
      "merge", "Check bundles whole (as import does), then write one bundle of their entries, each key once, byte for "
               "byte as they hold them; signed as export signs (KJIT_REMOTE_SIGNING_KEY_FILE, else "
               "KJIT_REMOTE_SECRET_FILE, else unsigned)");
  merge->add_option("bundles", *inputs, "The bundles to merge (kjit warm --shard I/N --bundle F writes one a shard)")
      ->required();
  merge->add_option("-o,--output", *output, "The bundle to write (replaced whole)")->required();
  merge->footer("Exit codes: 0 merged, 1 an input is refused (truncated, damaged, altered, signed with a key not "
                "configured here, made by another toolkit) and nothing is written, 2 usage.");
  merge->callback([&ctx, inputs, output] {
    ctx.input = *output;
    BundleMergeOptions o;
    o.keys = bundle_keys(ctx);
    std::vector<std::filesystem::path> files(inputs->begin(), inputs->end());
    const BundleMergeResult r = merge_bundles(files, *output, o);
    if (!r.conflicts.empty() && ctx.shows(LogLevel::warn)) {
      fmt::print(stderr, "kjit: warning: {} key{} came with different bytes from two bundles (the first one's kept), "
                         "e.g. {}\n",
                 r.conflicts.size(), r.conflicts.size() == 1 ? "" : "s", r.conflicts.front());
    }
    if (ctx.json) {
      nlohmann::json in = nlohmann::json::array();
      for (std::size_t i = 0; i < r.inputs.size(); ++i) {
        in.push_back({{"file", json_name((*inputs)[i])}, {"bundle", bundle_json(r.inputs[i])}});
      }
      print_json(nlohmann::json{{"file", json_name(r.file.string())}, {"file_size", r.file_size},
                                {"bundle", bundle_json(r.bundle)}, {"inputs", in}, {"duplicates", r.duplicates},
                                {"conflicts", r.conflicts}},
                 2);
      return;
    }
    fmt::print("merged {} bundle{} into {}: {} ({}), {}{}\n", r.inputs.size(), r.inputs.size() == 1 ? "" : "s",
               r.file.string(), entries(r.bundle.entries), human(r.bundle.bytes),
               r.bundle.signature == "none" ? std::string("unsigned") : "signed " + r.bundle.signature,
               r.duplicates + r.conflicts.size() == 0
                   ? std::string()
                   : fmt::format("; {} found in more than one", r.duplicates + r.conflicts.size()));
  });
}

void add_keygen(CLI::App& cache, Context& ctx) {
  auto out = std::make_shared<std::string>();
  auto* command = cache.add_subcommand(
      "keygen", "Make an ed25519 key pair: PREFIX.key signs (CI: KJIT_REMOTE_SIGNING_KEY_FILE), PREFIX.pub checks "
                "(nodes: KJIT_REMOTE_PUBLIC_KEY_FILE); existing files are never replaced");
  command->add_option("--out", *out, "The files' prefix: writes PREFIX.key (0600) and PREFIX.pub")->required();
  command->callback([&ctx, out] {
    SigningKeyFiles k = generate_signing_key(*out);
    if (ctx.json) {
      print_json(nlohmann::json{{"key_file", json_name(k.key_file.string())},
                                {"public_key_file", json_name(k.public_key_file.string())},
                                {"public_key", k.public_key}},
                 2);
      return;
    }
    fmt::print("{}\n", k.public_key);
    if (!ctx.quiet) {
      fmt::print(stderr, "kjit: wrote {} (the signing key: keep it secret, for CI) and {} (for every node)\n",
                 k.key_file.string(), k.public_key_file.string());
    }
  });
}

// `kjit cache bundle push|pull REF`: a warm bundle as an OCI artifact in a registry
// (docs/bundles.md#as-oci-artifacts); credentials from KJIT_REMOTE_HTTP_AUTH_FILE.
void add_bundle(CLI::App& cache, Context& ctx) {
  auto* bundle = cache.add_subcommand(
      "bundle", "Warm bundles: merge several into one; push and pull them as OCI artifacts in a registry");
  bundle->require_subcommand(1);
  bundle->fallthrough();
  add_bundle_merge(bundle, ctx);
  auto push_ref = std::make_shared<std::string>();
  auto archs = std::make_shared<std::vector<std::string>>();
  auto* push = bundle->add_subcommand(
      "push", "Export the cache's entries as one signed bundle and push it to oci://HOST[:PORT]/REPO:TAG; prints the "
              "artifact's digest (pull by it)");
  push->add_option("reference", *push_ref, "oci://HOST[:PORT]/REPO:TAG")->required();
  push->add_option("--arch", *archs, "Only compile results for these archs (sm_90, repeat or comma-separated)")
      ->delimiter(',')
      ->allow_extra_args(false);
  push->callback([&ctx, push_ref, archs] {
    CacheExportOptions o;
    o.archs = *archs;
    o.keys = bundle_keys(ctx);
    const RuntimeConfig c = ctx.runtime_config();
    CacheExportResult r = open_cache(ctx).export_bundle(RemoteBundle{*push_ref, "", c.remote_http_auth_file}, o);
    warn_skipped(r.skipped);
    if (ctx.json) {
      print_json(nlohmann::json{{"reference", r.remote}, {"digest", r.digest}, {"size", r.file_size},
                                {"bundle", bundle_json(r.bundle)}, {"skipped", skipped_json(r.skipped)}},
                 2);
      return;
    }
    fmt::print("pushed {} ({}) to {}: {}, {}\n", entries(r.bundle.entries), human(r.file_size), r.remote, r.digest,
               r.bundle.signature == "none" ? std::string("unsigned") : "signed " + r.bundle.signature);
  });
  auto pull_ref = std::make_shared<std::string>();
  auto check = std::make_shared<bool>(false);
  auto* pull = bundle->add_subcommand(
      "pull", "Pull a bundle from oci://HOST[:PORT]/REPO@sha256:DIGEST (or :TAG, resolved and printed as its digest), "
              "check the registry's digests and the bundle whole, then import it (exit 1: refused)");
  pull->add_option("reference", *pull_ref, "oci://HOST[:PORT]/REPO@sha256:DIGEST or oci://HOST[:PORT]/REPO:TAG")
      ->required();
  pull->add_flag("--check", *check, "Check the bundle whole and import nothing");
  pull->callback([&ctx, pull_ref, check] {
    CacheImportOptions o;
    o.keys = bundle_keys(ctx);
    o.check_only = *check;
    const RuntimeConfig c = ctx.runtime_config();
    CacheImportResult r = open_cache(ctx).import_bundle(RemoteBundle{*pull_ref, "", c.remote_http_auth_file}, o);
    for (const auto& w : r.warnings) {
      if (ctx.shows(LogLevel::warn)) fmt::print(stderr, "kjit: warning: {}\n", w);
    }
    if (ctx.json) {
      print_json(nlohmann::json{{"reference", *pull_ref}, {"digest", r.digest}, {"bundle", bundle_json(r.bundle)},
                                {"imported", !*check}, {"written", r.written}, {"present", r.present},
                                {"evicted", r.evicted}, {"warnings", r.warnings}},
                 2);
      return;
    }
    fmt::print("pulled {} ({}): {}, {} written, {} already present{}\n", *pull_ref, r.digest,
               entries(r.bundle.entries), r.written, r.present, *check ? " (checked only)" : "");
  });
}

}  // namespace

void add_cache_commands(CLI::App& app, Context& ctx) {
  auto* cache = app.add_subcommand("cache", "Inspect and maintain the disk cache");
  cache->require_subcommand(1);
  cache->fallthrough();
  add_stats(*cache, ctx);
  add_remote(*cache, ctx);
  add_ls(*cache, ctx);
  add_verify(*cache, ctx);
  add_prune(*cache, ctx);
  add_clear(*cache, ctx);
  add_explain(*cache, ctx);
  add_export(*cache, ctx);
  add_import(*cache, ctx);
  add_bundle(*cache, ctx);
  add_keygen(*cache, ctx);
}

}  // namespace kjit::cli
