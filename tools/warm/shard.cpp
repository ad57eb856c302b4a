// kjit::Shard: the spec's grammar, the job systems' variables, and the rendezvous choice (the
// remote tier's own function, core/cache/remote/rendezvous, over the names "0" .. "N-1").
#include <kjit/error.hpp>
#include <kjit/tools/shard.hpp>

#include "core/cache/key.hpp"
#include "core/cache/remote/rendezvous.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>

namespace kjit {
namespace {

constexpr std::string_view k_takes = "I/N (0 <= I < N, e.g. 0/4 .. 3/4), auto, or auto/N";

// A whole decimal number (digits only: no sign, no spaces), at most 9 digits.
std::optional<unsigned> number(std::string_view text) {
  if (text.empty() || text.size() > 9 || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  unsigned out = 0;
  std::from_chars(text.data(), text.data() + text.size(), out);
  return out;
}

Shard::Environment process_environment() {
  return [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

// A variable's value as a number; nullopt when unset; UsageError when set to something else.
std::optional<unsigned> variable(const Shard::Environment& env, const char* name) {
  const auto text = env(name);
  if (!text) return std::nullopt;
  const auto n = number(*text);
  if (!n) throw UsageError(fmt::format("--shard auto: {}=\"{}\" is not a whole number", name, *text));
  return n;
}

}  // namespace

Shard::Shard() : m_names{"0"} {}

Shard::Shard(unsigned index, unsigned count, std::string source) : m_index(index), m_count(count), m_source(std::move(source)) {
  const std::string what = m_source.empty() ? fmt::format("shard {}/{}", index, count) : m_source;
  if (count == 0) throw UsageError(fmt::format("{}: there must be at least one shard", what));
  if (count > k_max_count) throw UsageError(fmt::format("{}: at most {} shards", what, k_max_count));
  if (index >= count) {
    throw UsageError(fmt::format("{}: shard {} of {} does not exist: shards count from 0 ({}/{} to {}/{}), as "
                                 "SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX and RANK do",
                                 what, index, count, 0, count, count - 1, count));
  }
  m_names.reserve(count);
  for (unsigned i = 0; i < count; ++i) m_names.push_back(std::to_string(i));
}

Shard Shard::parse(std::string_view spec, const Environment& env) {
  if (spec == "auto") return from_environment(std::nullopt, env);
  const std::size_t slash = spec.find('/');
  if (slash != std::string_view::npos) {
    const std::string_view left = spec.substr(0, slash), right = spec.substr(slash + 1);
    const auto count = number(right);
    if (count && left == "auto") return from_environment(*count, env);
    const auto index = number(left);
    if (index && count) return Shard(*index, *count, fmt::format("--shard {}", spec));
  }
  throw UsageError(fmt::format("--shard \"{}\": expected {}", spec, k_takes));
}

Shard Shard::from_environment(std::optional<unsigned> count, const Environment& given) {
  const Environment env = given ? given : process_environment();
  const std::string asked = count ? fmt::format("--shard auto/{}", *count) : std::string("--shard auto");
  // The count found must agree with the one given on the command line, when both are there.
  auto make = [&](unsigned index, unsigned found, std::string source) {
    if (count && *count != found) {
      throw UsageError(fmt::format("{}: {} says there are {} shards", asked, source, found));
    }
    return Shard(index, found, std::move(source));
  };

  // A Slurm job array: --array=0-7 (ids 0..7, count 8), 1-8 (min 1), 0-14:2 (step 2).
  if (const auto id = variable(env, "SLURM_ARRAY_TASK_ID")) {
    const auto total = variable(env, "SLURM_ARRAY_TASK_COUNT");
    if (!total) {
      throw UsageError(fmt::format("{}: SLURM_ARRAY_TASK_ID={} is set and SLURM_ARRAY_TASK_COUNT is not", asked, *id));
    }
    const unsigned min = variable(env, "SLURM_ARRAY_TASK_MIN").value_or(0);
    const unsigned step = std::max(1u, variable(env, "SLURM_ARRAY_TASK_STEP").value_or(1));
    std::string source = fmt::format("SLURM_ARRAY_TASK_ID={}, SLURM_ARRAY_TASK_COUNT={}", *id, *total);
    if (min != 0) source += fmt::format(", SLURM_ARRAY_TASK_MIN={}", min);
    if (step != 1) source += fmt::format(", SLURM_ARRAY_TASK_STEP={}", step);
    if (*id < min || (*id - min) % step != 0) {
      throw UsageError(fmt::format("{}: {}: the task is not on the array's range (give sbatch a range, "
                                   "--array=0-{})",
                                   asked, source, *total == 0 ? 0 : *total - 1));
    }
    return make((*id - min) / step, *total, std::move(source));
  }
  // A Kubernetes indexed Job: the index alone; the count is the Job's completions.
  if (const auto index = variable(env, "JOB_COMPLETION_INDEX")) {
    const std::string source = fmt::format("JOB_COMPLETION_INDEX={}", *index);
    if (!count) {
      throw UsageError(fmt::format("--shard auto: {} gives the index and no count: give --shard auto/N, N the "
                                   "Job's completions",
                                   source));
    }
    return Shard(*index, *count, fmt::format("{} of {}", source, asked));
  }
  // torchrun, mpirun wrappers and most launchers of N ranks.
  if (const auto rank = variable(env, "RANK")) {
    if (const auto world = variable(env, "WORLD_SIZE")) {
      return make(*rank, *world, fmt::format("RANK={}, WORLD_SIZE={}", *rank, *world));
    }
    if (count) return Shard(*rank, *count, fmt::format("RANK={} of {}", *rank, asked));
    throw UsageError(fmt::format("--shard auto: RANK={} is set and WORLD_SIZE is not", *rank));
  }
  throw UsageError(fmt::format("{}: none of SLURM_ARRAY_TASK_ID (a Slurm array), JOB_COMPLETION_INDEX (a Kubernetes "
                               "indexed Job) or RANK (with WORLD_SIZE) is set; give --shard I/N",
                               asked));
}

std::string Shard::str() const { return fmt::format("{}/{}", m_index, m_count); }

unsigned Shard::shard_of(std::string_view key) const {
  const auto k = cache::Key::from_hex(key);
  if (!k) throw UsageError(fmt::format("the shard of \"{}\": a content key is 32 hex digits", key));
  if (m_count == 1) return 0;
  std::vector<cache::RendezvousShard> names;
  names.reserve(m_names.size());
  for (const auto& n : m_names) names.push_back({n, 1.0});
  return static_cast<unsigned>(cache::rendezvous_shard(*k, names));
}

}  // namespace kjit
