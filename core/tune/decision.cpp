#include "core/tune/decision.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <optional>

namespace kjit::tune {
namespace {

// The key domain of decisions: never equal to a compile's or a link's key.
constexpr std::uint32_t k_decision_key_version = 0x7475'0001;  // "tu", 1

}  // namespace

std::string explain_sol(const Decision& d) {
  if (d.sol.size() != d.labels.size() || d.sol[d.chosen].empty()) return {};
  // The fastest other candidate with figures.
  std::optional<std::size_t> other;
  for (std::size_t i = 0; i < d.sol.size(); ++i) {
    if (i == d.chosen || d.sol[i].empty()) continue;
    if (!other || (d.median_us[i] >= 0 && (d.median_us[*other] < 0 || d.median_us[i] < d.median_us[*other]))) other = i;
  }
  if (!other) return {};
  auto value = [](const std::vector<std::pair<std::string, double>>& f, std::string_view name) -> std::optional<double> {
    for (const auto& [n, v] : f) {
      if (n == name) return v;
    }
    return std::nullopt;
  };
  struct Shown {
    std::string_view metric, title;
    bool duration;
  };
  constexpr Shown k_shown[] = {{"dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM", false},
                               {"sm__throughput.avg.pct_of_peak_sustained_elapsed", "Compute", false},
                               {"sm__warps_active.avg.pct_of_peak_sustained_active", "Occupancy", false},
                               {"gpu__time_duration.sum", "Duration", true}};
  std::string out;
  for (const auto& s : k_shown) {
    const auto a = value(d.sol[d.chosen], s.metric), b = value(d.sol[*other], s.metric);
    if (!a || !b) continue;
    out += out.empty() ? "" : ", ";
    out += s.duration ? fmt::format("{} {:.1f} us vs {:.1f} us", s.title, *a / 1e3, *b / 1e3)
                      : fmt::format("{} {:.1f}% vs {:.1f}%", s.title, *a, *b);
  }
  if (out.empty()) return {};
  return fmt::format("{} (vs {})", out, d.labels[*other]);
}

cache::Key decision_key(const DecisionKeyFields& f) {
  cache::Hasher h(k_decision_key_version, cache::Hasher::Fields::drop);
  h.field("what", "kjit tuning decision");
  h.field("source", f.source_key);
  h.field("candidates", static_cast<std::uint64_t>(f.candidates.size()));
  for (const auto& c : f.candidates) h.field("candidate", c);
  h.field("device", f.device_name);
  h.field("compute capability", static_cast<std::uint64_t>(f.compute_capability));
  h.field("driver", static_cast<std::uint64_t>(f.driver_version));
  h.field("kjit", f.kjit_version);
  h.field("tuning key", f.tuning_key);
  if (!f.launch.empty()) h.field("launch", f.launch);  // only for spec tuners: other keys stay as they were
  return h.finish();
}

std::string encode_decision(const cache::Key& key, const Decision& d) {
  nlohmann::ordered_json j;
  j["chosen"] = d.chosen;
  j["labels"] = d.labels;
  j["median_us"] = d.median_us;
  j["why_not"] = d.why_not;
  if (!d.sol.empty()) {
    j["sol"] = nlohmann::ordered_json::array();
    for (const auto& figures : d.sol) {
      nlohmann::ordered_json f = nlohmann::ordered_json::object();
      for (const auto& [name, value] : figures) f[name] = value;
      j["sol"].push_back(std::move(f));
    }
  }
  j["noise"] = d.noise;
  j["tuning_key"] = d.tuning_key;
  j["device"] = d.device;
  j["name"] = d.name;
  cache::Entry e;
  e.set(cache::SectionKind::tuning, j.dump());
  return cache::serialize(key, e);
}

std::optional<Decision> decode_decision(const cache::Key& key, std::string_view bytes, std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<Decision> {
    if (why != nullptr) *why = std::move(reason);
    return std::nullopt;
  };
  cache::ParseResult parsed = cache::parse(bytes);
  if (!parsed.entry) return fail(parsed.error);
  if (!(parsed.key == key)) return fail("recorded under another key");
  const std::string* text = parsed.entry->find(cache::SectionKind::tuning);
  if (text == nullptr) return fail("no tuning section");
  try {
    const auto j = nlohmann::json::parse(*text);
    Decision d;
    d.chosen = j.at("chosen").get<std::size_t>();
    d.labels = j.at("labels").get<std::vector<std::string>>();
    d.median_us = j.at("median_us").get<std::vector<double>>();
    d.why_not = j.at("why_not").get<std::vector<std::string>>();
    if (j.contains("sol")) {
      for (const auto& figures : j.at("sol")) {
        auto& out = d.sol.emplace_back();
        for (const auto& [name, value] : figures.items()) out.emplace_back(name, value.get<double>());
      }
    }
    d.noise = j.at("noise").get<double>();
    d.tuning_key = j.at("tuning_key").get<std::string>();
    d.device = j.at("device").get<std::string>();
    d.name = j.value("name", std::string());  // absent in decisions of earlier kjit versions
    if (d.labels.empty() || d.chosen >= d.labels.size() || d.median_us.size() != d.labels.size() ||
        d.why_not.size() != d.labels.size() || (!d.sol.empty() && d.sol.size() != d.labels.size())) {
      return fail("inconsistent decision");
    }
    return d;
  } catch (const nlohmann::json::exception& e) {
    return fail(fmt::format("unreadable decision: {}", e.what()));
  }
}

std::optional<std::size_t> choose(const std::vector<std::optional<double>>& times, double noise) {
  std::optional<double> best;
  for (const auto& t : times) {
    if (t && (!best || *t < *best)) best = t;
  }
  if (!best) return std::nullopt;
  for (std::size_t i = 0; i < times.size(); ++i) {
    if (times[i] && *times[i] <= *best * (1.0 + noise)) return i;
  }
  return std::nullopt;
}

HalvingResult successive_halving(std::size_t count,
                                 const std::function<std::optional<double>(std::size_t, int, std::string*)>& time,
                                 const HalvingOptions& options) {
  HalvingResult r;
  r.times.assign(count, std::nullopt);
  r.rounds_run.assign(count, 0);
  r.why_not.assign(count, std::string());
  std::vector<bool> live(count, true);
  for (int round = 0; round < std::max(1, options.rounds); ++round) {
    std::size_t alive = 0;
    for (std::size_t i = 0; i < count; ++i) {
      if (!live[i]) continue;
      std::string why;
      r.times[i] = time(i, round, &why);
      ++r.rounds_run[i];
      if (!r.times[i]) {
        live[i] = false;
        r.why_not[i] = why.empty() ? "failed" : why;
      } else {
        ++alive;
      }
    }
    if (alive <= 1) break;
    double best = -1;
    for (std::size_t i = 0; i < count; ++i) {
      if (live[i] && (best < 0 || *r.times[i] < best)) best = *r.times[i];
    }
    if (round + 1 == std::max(1, options.rounds)) break;
    for (std::size_t i = 0; i < count; ++i) {
      if (live[i] && *r.times[i] > best * options.drop_above) {
        live[i] = false;
        r.why_not[i] = fmt::format("dropped after round {}: {:.2f}x the best", round + 1, *r.times[i] / best);
      }
    }
  }
  r.finalists = live;
  return r;
}

long long next_power_of_two(long long value) {
  long long p = 1;
  while (p < value && p < (1LL << 62)) p <<= 1;
  return p;
}

}  // namespace kjit::tune
