#include "tools/profile/summary.hpp"

#include "tools/profile/metric_names.hpp"

#include <kjit/error.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cxxabi.h>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <unordered_map>

namespace kjit::profile {

const char* to_string(TransferKind kind) {
  switch (kind) {
  case TransferKind::htod: return "memcpy HtoD";
  case TransferKind::dtoh: return "memcpy DtoH";
  case TransferKind::dtod: return "memcpy DtoD";
  case TransferKind::htoh: return "memcpy HtoH";
  case TransferKind::ptop: return "memcpy PtoP";
  case TransferKind::other_copy: return "memcpy";
  case TransferKind::memset: return "memset";
  }
  return "memcpy";
}

std::string demangle(const std::string& mangled) {
  if (mangled.rfind("_Z", 0) != 0) return mangled;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status),
                                             std::free);
  return status == 0 && out ? std::string(out.get()) : mangled;
}

std::string short_kernel_name(const std::string& mangled) {
  std::string d = demangle(mangled);
  if (d == mangled) return d;
  // The parameter list: the last top-level "(...)", found from the end.
  std::size_t end = d.size();
  while (end > 0 && d[end - 1] != ')') --end;  // past " const" and the like
  if (end == 0) return d;
  int depth = 0;
  std::size_t open = std::string::npos;
  for (std::size_t i = end; i-- > 0;) {
    if (d[i] == ')' || d[i] == '>') ++depth;
    else if (d[i] == '(' || d[i] == '<') {
      if (--depth == 0 && d[i] == '(') {
        open = i;
        break;
      }
    }
  }
  if (open == std::string::npos) return d;
  std::string name = d.substr(0, open);
  // The return type (a kernel's is void), when the demangler wrote one (templates).
  if (name.rfind("void ", 0) == 0) name.erase(0, 5);
  return name;
}

namespace {

struct MetricAccumulator {
  double sum = 0, min = 0, max = 0;
};

struct KernelGroup {
  ProfileKernelRow row;
  bool seen = false;
  std::vector<MetricAccumulator> metrics;  // per Recording::metrics.names
};

std::string shape_of(const KernelEvent& k) {
  return fmt::format("grid ({},{},{}) block ({},{},{}) smem {}", k.grid[0], k.grid[1], k.grid[2], k.block[0],
                     k.block[1], k.block[2], k.static_shared + k.dynamic_shared);
}

using Less = std::function<bool(const ProfileKernelRow&, const ProfileKernelRow&)>;

Less order(const std::string& sort_by) {
  auto by = [](auto field) -> Less {
    return [field](const ProfileKernelRow& a, const ProfileKernelRow& b) {
      if (field(a) != field(b)) return field(a) > field(b);
      return a.name != b.name ? a.name < b.name : a.shape < b.shape;
    };
  };
  if (sort_by == "gpu_total") return by([](const ProfileKernelRow& r) { return r.gpu_total_us; });
  if (sort_by == "gpu_mean") return by([](const ProfileKernelRow& r) { return r.gpu_mean_us; });
  if (sort_by == "gpu_min") return by([](const ProfileKernelRow& r) { return r.gpu_min_us; });
  if (sort_by == "gpu_max") return by([](const ProfileKernelRow& r) { return r.gpu_max_us; });
  if (sort_by == "calls") return by([](const ProfileKernelRow& r) { return static_cast<double>(r.calls); });
  if (sort_by == "host_total") return by([](const ProfileKernelRow& r) { return r.host_enqueue_total_us; });
  if (sort_by == "name") {
    return [](const ProfileKernelRow& a, const ProfileKernelRow& b) {
      return a.name != b.name ? a.name < b.name : a.shape < b.shape;
    };
  }
  throw UsageError(fmt::format("sorting the profile's table by \"{}\": no such column; use gpu_total, gpu_mean, "
                               "gpu_min, gpu_max, calls, host_total or name", sort_by));
}

}  // namespace

ProfileSummary summarize(const Recording& rec, const TableOptions& options) {
  const Less less = order(options.sort_by);
  ProfileSummary s;
  s.recorded = true;
  s.dropped = rec.dropped;
  s.wall_us = rec.stop > rec.start ? static_cast<double>(rec.stop - rec.start) / 1e3 : 0.0;

  // Display names: kjit's name expression where it loaded the kernel, else the short demangled one.
  std::unordered_map<std::string, const KnownKernel*> known;
  for (const auto& k : rec.known) known.emplace(k.mangled, &k);
  std::vector<std::string> display(rec.names.size());
  std::vector<std::string> program(rec.names.size());
  std::vector<bool> named(rec.names.size(), false);
  auto name_of = [&](std::uint32_t index) -> const std::string& {
    if (!named[index]) {
      named[index] = true;
      if (auto it = known.find(rec.names[index]); it != known.end()) {
        display[index] = it->second->expression.empty() ? short_kernel_name(rec.names[index]) : it->second->expression;
        program[index] = it->second->program;
      } else {
        display[index] = short_kernel_name(rec.names[index]);
      }
    }
    return display[index];
  };

  std::unordered_map<std::uint32_t, std::uint64_t> enqueue;  // correlation -> host ns
  enqueue.reserve(rec.launches.size());
  for (const auto& l : rec.launches) enqueue[l.correlation] = l.end - l.start;

  // Hardware counters: each measured launch's sample by correlation; each asked name's source.
  const MetricRecording& m = rec.metrics;
  s.metric_names = m.names;
  s.metric_sol = m.sol;
  s.metric_passes = m.passes;
  s.metric_message = m.message;
  std::unordered_map<std::uint32_t, const MetricSample*> samples;
  samples.reserve(m.samples.size());
  for (const auto& sample : m.samples) samples.emplace(sample.correlation, &sample);
  std::vector<std::ptrdiff_t> counter_of(m.names.size(), -1);  // -1: a launch__ figure
  for (std::size_t i = 0; i < m.names.size(); ++i) {
    auto it = std::find(m.counters.begin(), m.counters.end(), m.names[i]);
    if (it != m.counters.end()) counter_of[i] = it - m.counters.begin();
  }

  std::map<std::pair<std::string, std::string>, KernelGroup> groups;
  for (const auto& k : rec.kernels) {
    const std::string& name = name_of(k.name);
    auto& g = groups[{name, options.by_shape ? shape_of(k) : std::string()}];
    const double us = static_cast<double>(k.end - k.start) / 1e3;
    if (!g.seen) {
      g.seen = true;
      g.row.name = name;
      g.row.shape = options.by_shape ? shape_of(k) : std::string();
      g.row.program = program[k.name];
      g.row.gpu_min_us = us;
      g.row.gpu_max_us = us;
    }
    ++g.row.calls;
    g.row.gpu_total_us += us;
    g.row.gpu_min_us = std::min(g.row.gpu_min_us, us);
    g.row.gpu_max_us = std::max(g.row.gpu_max_us, us);
    if (auto it = enqueue.find(k.correlation); it != enqueue.end()) {
      g.row.host_enqueue_total_us += static_cast<double>(it->second) / 1e3;
    }
    s.gpu_kernel_total_us += us;
    ++s.kernel_count;
    if (auto it = samples.find(k.correlation); it != samples.end()) {
      const MetricSample& sample = *it->second;
      g.metrics.resize(m.names.size());
      for (std::size_t i = 0; i < m.names.size(); ++i) {
        const std::ptrdiff_t c = counter_of[i];
        const double v = c < 0 ? launch_value(m.names[i], k)
                               : static_cast<std::size_t>(c) < sample.values.size() ? sample.values[static_cast<std::size_t>(c)]
                                                                                    : 0.0;
        auto& a = g.metrics[i];
        a.sum += v;
        a.min = g.row.measured == 0 ? v : std::min(a.min, v);
        a.max = g.row.measured == 0 ? v : std::max(a.max, v);
      }
      ++g.row.measured;
      ++s.measured_launches;
    }
  }
  for (auto& [_, g] : groups) {
    for (std::size_t i = 0; i < g.metrics.size() && g.row.measured > 0; ++i) {
      const auto& a = g.metrics[i];
      g.row.metrics.push_back({m.names[i], a.sum / static_cast<double>(g.row.measured), a.min, a.max});
    }
    g.row.gpu_mean_us = g.row.gpu_total_us / static_cast<double>(g.row.calls);
    g.row.gpu_percent = s.gpu_kernel_total_us > 0 ? 100.0 * g.row.gpu_total_us / s.gpu_kernel_total_us : 0.0;
    s.kernels.push_back(std::move(g.row));
  }
  s.kernel_names = s.kernels.size();
  std::sort(s.kernels.begin(), s.kernels.end(), less);
  if (options.limit != 0 && s.kernels.size() > options.limit) s.kernels.resize(options.limit);

  std::map<std::uint8_t, ProfileTransferRow> transfers;
  for (const auto& t : rec.transfers) {
    auto& row = transfers[t.kind];
    row.kind = to_string(static_cast<TransferKind>(t.kind));
    ++row.calls;
    row.bytes += t.bytes;
    row.gpu_total_us += static_cast<double>(t.end - t.start) / 1e3;
  }
  for (auto& [_, row] : transfers) s.transfers.push_back(std::move(row));

  if (options.phases) {
    // kjit's phases in the request path's order, then launch enqueue, then user ranges by name.
    std::map<std::pair<int, std::string>, ProfilePhaseRow> phases;
    auto add = [&](int order_key, const std::string& name, std::uint64_t ns) {
      auto& row = phases[{order_key, name}];
      row.phase = name;
      ++row.count;
      const double us = static_cast<double>(ns) / 1e3;
      row.total_us += us;
      row.max_us = std::max(row.max_us, us);
    };
    for (const auto& r : rec.ranges) {
      if (r.phase == Phase::user) add(1000, r.name, r.end - r.start);
      else add(static_cast<int>(r.phase), to_string(r.phase), r.end - r.start);
    }
    for (const auto& l : rec.launches) add(static_cast<int>(Phase::user), "launch enqueue", l.end - l.start);
    for (auto& [_, row] : phases) {
      row.mean_us = row.total_us / static_cast<double>(row.count);
      s.phases.push_back(std::move(row));
    }
  }
  return s;
}

}  // namespace kjit::profile

namespace kjit {
namespace {

std::string duration(double us) {
  if (us >= 1e6) return fmt::format("{:.3f} s", us / 1e6);
  if (us >= 1e3) return fmt::format("{:.3f} ms", us / 1e3);
  return fmt::format("{:.3f} us", us);
}

std::string bytes_text(std::uint64_t b) {
  if (b >= (1ull << 30)) return fmt::format("{:.2f} GiB", static_cast<double>(b) / (1ull << 30));
  if (b >= (1ull << 20)) return fmt::format("{:.2f} MiB", static_cast<double>(b) / (1ull << 20));
  if (b >= (1ull << 10)) return fmt::format("{:.2f} KiB", static_cast<double>(b) / (1ull << 10));
  return fmt::format("{} B", b);
}

// Columns: a header, then rows; the first column left-aligned, the others right-aligned.
std::string columns(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width;
  for (const auto& r : rows) {
    if (width.size() < r.size()) width.resize(r.size(), 0);
    for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  std::string out;
  std::size_t total = 0;
  for (auto w : width) total += w + 2;
  const std::string rule(total > 2 ? total - 2 : 0, '-');
  for (std::size_t n = 0; n < rows.size(); ++n) {
    const auto& r = rows[n];
    std::string line;
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (i > 0) line += "  ";
      line += i == 0 ? fmt::format("{:<{}}", r[i], width[i]) : fmt::format("{:>{}}", r[i], width[i]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
    if (n == 0) out += rule + "\n";
  }
  return out;
}

bool is_percent(std::string_view name) { return name.find(".pct") != std::string_view::npos; }

std::string metric_text(std::string_view name, double v) {
  if (name == profile::k_duration_metric) return duration(v / 1e3);
  if (is_percent(name)) return fmt::format("{:.1f}", v);
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  if (std::fabs(v) >= 1e6) return fmt::format("{:.4g}", v);
  return fmt::format("{:.3f}", v);
}

// "85.6", or "85.1 (84.0-86.3)" where the measured launches differ.
std::string metric_cell(const ProfileMetric& m) {
  const std::string low = metric_text(m.name, m.min), high = metric_text(m.name, m.max);
  if (low == high) return metric_text(m.name, m.mean);
  return fmt::format("{} ({}-{})", metric_text(m.name, m.mean), low, high);
}

// The metrics table below the kernels: one row per kernel row with measured launches.
std::string metric_table(const ProfileSummary& s, const TableOptions& options,
                         const std::function<std::string(const std::string&)>& shown) {
  std::string out = fmt::format("\nHardware counters: {} launch{} measured", s.measured_launches,
                                s.measured_launches == 1 ? "" : "es");
  if (s.metric_passes != 0) {
    out += fmt::format(", {} pass{} each (measured launches were serialized and replayed)", s.metric_passes,
                       s.metric_passes == 1 ? "" : "es");
  }
  out += s.metric_sol ? "; Nsight Compute's speed of light: mean, (min-max) where launches differ\n"
                      : "; mean, (min-max) where launches differ\n";
  if (!s.metric_message.empty()) out += fmt::format("{}\n", s.metric_message);
  // Columns: with "sol", its titled figures (as ncu names them) and any other name asked; else every name.
  std::vector<std::size_t> shown_metrics;
  std::vector<std::string> header{"Name"};
  if (options.by_shape) header.push_back("Shape");
  header.push_back("Measured");
  for (std::size_t i = 0; i < s.metric_names.size(); ++i) {
    const auto title = profile::sol_title(s.metric_names[i]);
    const bool in_sol = std::find(profile::sol_metrics().begin(), profile::sol_metrics().end(), s.metric_names[i]) !=
                        profile::sol_metrics().end();
    if (s.metric_sol && in_sol && title.empty()) continue;  // in the summary and JSON, not in the table
    shown_metrics.push_back(i);
    header.emplace_back(s.metric_sol && !title.empty() ? std::string(title) : s.metric_names[i]);
  }
  std::vector<std::vector<std::string>> rows{header};
  for (const auto& k : s.kernels) {
    if (k.measured == 0) continue;
    std::vector<std::string> r{shown(k.name)};
    if (options.by_shape) r.push_back(k.shape);
    r.push_back(std::to_string(k.measured));
    for (std::size_t i : shown_metrics) r.push_back(i < k.metrics.size() ? metric_cell(k.metrics[i]) : "-");
    rows.push_back(std::move(r));
  }
  if (rows.size() > 1) out += columns(rows);
  return out;
}

}  // namespace

std::string format_table(const ProfileSummary& s, const TableOptions& options) {
  if (!s.recorded) return fmt::format("kjit profiler: nothing recorded: {}\n", s.message);
  std::string out;
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"Name", "Calls", "GPU total", "GPU mean", "GPU min", "GPU max", "% GPU", "Host enqueue"});
  if (options.by_shape) rows.front().insert(rows.front().begin() + 1, "Shape");
  auto shown = [&](const std::string& name) {
    if (options.name_width == 0 || name.size() <= options.name_width) return name;
    return name.substr(0, options.name_width > 3 ? options.name_width - 3 : 0) + "...";
  };
  for (const auto& k : s.kernels) {
    std::vector<std::string> r{shown(k.name), std::to_string(k.calls), duration(k.gpu_total_us), duration(k.gpu_mean_us),
                               duration(k.gpu_min_us), duration(k.gpu_max_us), fmt::format("{:.1f}%", k.gpu_percent),
                               duration(k.host_enqueue_total_us)};
    if (options.by_shape) r.insert(r.begin() + 1, k.shape);
    rows.push_back(std::move(r));
  }
  out += columns(rows);
  out += fmt::format("{} kernel launches of {} kernels{}: {} on the GPU in {} of wall time", s.kernel_count,
                     s.kernel_names, s.kernels.size() < s.kernel_names ? fmt::format(" ({} shown)", s.kernels.size()) : "",
                     duration(s.gpu_kernel_total_us), duration(s.wall_us));
  if (s.dropped != 0) out += fmt::format("; {} records dropped (the oldest)", s.dropped);
  out += "\n";
  if (!s.metric_names.empty()) out += metric_table(s, options, shown);
  if (!s.transfers.empty()) {
    rows.clear();
    rows.push_back({"Transfer", "Calls", "Bytes", "GPU total"});
    for (const auto& t : s.transfers) {
      rows.push_back({t.kind, std::to_string(t.calls), bytes_text(t.bytes), duration(t.gpu_total_us)});
    }
    out += "\n" + columns(rows);
  }
  if (options.phases && !s.phases.empty()) {
    rows.clear();
    rows.push_back({"Host phase", "Count", "Total", "Mean", "Max"});
    for (const auto& p : s.phases) {
      rows.push_back({p.phase, std::to_string(p.count), duration(p.total_us), duration(p.mean_us), duration(p.max_us)});
    }
    out += "\n" + columns(rows);
  }
  return out;
}

std::string to_json(const ProfileSummary& s) {
  nlohmann::ordered_json j;
  j["recorded"] = s.recorded;
  j["message"] = s.message;
  j["kernel_count"] = s.kernel_count;
  j["kernel_names"] = s.kernel_names;
  j["gpu_kernel_total_us"] = s.gpu_kernel_total_us;
  j["wall_us"] = s.wall_us;
  j["dropped"] = s.dropped;
  if (!s.metric_names.empty()) {
    j["metrics"] = {{"names", s.metric_names}, {"sol", s.metric_sol}, {"passes", s.metric_passes},
                    {"measured_launches", s.measured_launches}, {"message", s.metric_message}};
  }
  j["kernels"] = nlohmann::ordered_json::array();
  for (const auto& k : s.kernels) {
    nlohmann::ordered_json row{{"name", k.name}, {"shape", k.shape}, {"program", k.program}, {"calls", k.calls},
                               {"gpu_total_us", k.gpu_total_us}, {"gpu_mean_us", k.gpu_mean_us},
                               {"gpu_min_us", k.gpu_min_us}, {"gpu_max_us", k.gpu_max_us},
                               {"gpu_percent", k.gpu_percent}, {"host_enqueue_total_us", k.host_enqueue_total_us}};
    if (!s.metric_names.empty()) {
      row["measured"] = k.measured;
      row["metrics"] = nlohmann::ordered_json::array();
      for (const auto& m : k.metrics) {
        row["metrics"].push_back({{"name", m.name}, {"mean", m.mean}, {"min", m.min}, {"max", m.max}});
      }
    }
    j["kernels"].push_back(std::move(row));
  }
  j["transfers"] = nlohmann::ordered_json::array();
  for (const auto& t : s.transfers) {
    j["transfers"].push_back({{"kind", t.kind}, {"calls", t.calls}, {"bytes", t.bytes}, {"gpu_total_us", t.gpu_total_us}});
  }
  j["phases"] = nlohmann::ordered_json::array();
  for (const auto& p : s.phases) {
    j["phases"].push_back({{"phase", p.phase}, {"count", p.count}, {"total_us", p.total_us}, {"mean_us", p.mean_us},
                           {"max_us", p.max_us}});
  }
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

ProfileSummary profile_summary_from_json(std::string_view text) {
  try {
    const auto j = nlohmann::json::parse(text);
    ProfileSummary s;
    s.recorded = j.at("recorded").get<bool>();
    s.message = j.at("message").get<std::string>();
    s.kernel_count = j.at("kernel_count").get<std::uint64_t>();
    s.kernel_names = j.at("kernel_names").get<std::size_t>();
    s.gpu_kernel_total_us = j.at("gpu_kernel_total_us").get<double>();
    s.wall_us = j.at("wall_us").get<double>();
    s.dropped = j.at("dropped").get<std::uint64_t>();
    if (j.contains("metrics")) {
      const auto& m = j.at("metrics");
      s.metric_names = m.at("names").get<std::vector<std::string>>();
      s.metric_sol = m.at("sol").get<bool>();
      s.metric_passes = m.at("passes").get<std::size_t>();
      s.measured_launches = m.at("measured_launches").get<std::uint64_t>();
      s.metric_message = m.at("message").get<std::string>();
    }
    for (const auto& k : j.at("kernels")) {
      ProfileKernelRow r;
      r.name = k.at("name");
      r.shape = k.at("shape");
      r.program = k.at("program");
      r.calls = k.at("calls");
      r.gpu_total_us = k.at("gpu_total_us");
      r.gpu_mean_us = k.at("gpu_mean_us");
      r.gpu_min_us = k.at("gpu_min_us");
      r.gpu_max_us = k.at("gpu_max_us");
      r.gpu_percent = k.at("gpu_percent");
      r.host_enqueue_total_us = k.at("host_enqueue_total_us");
      if (k.contains("measured")) r.measured = k.at("measured");
      if (k.contains("metrics")) {
        for (const auto& m : k.at("metrics")) r.metrics.push_back({m.at("name"), m.at("mean"), m.at("min"), m.at("max")});
      }
      s.kernels.push_back(std::move(r));
    }
    for (const auto& t : j.at("transfers")) {
      s.transfers.push_back({t.at("kind"), t.at("calls"), t.at("bytes"), t.at("gpu_total_us")});
    }
    for (const auto& p : j.at("phases")) {
      s.phases.push_back({p.at("phase"), p.at("count"), p.at("total_us"), p.at("mean_us"), p.at("max_us")});
    }
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("reading a profile summary: not one kjit wrote ({})", e.what()));
  }
}

}  // namespace kjit
