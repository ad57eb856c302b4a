// kjit::Shard: one of N parts of a warm or a tune (`kjit warm --shard I/N`, `kjit tune --shard I/N`),
// so that N machines (a CI matrix, a Slurm array, a Kubernetes indexed Job, Dask tasks) split
// the work and each item is done by exactly one of them. An item goes to a shard by rendezvous
// hashing of its content key (its cache key: the same key and the same hashing as the Redis
// shards of the remote tier, core/cache/remote/rendezvous), over the shard names "0" .. "N-1".
// So the split depends on what an item is, never on where it stands in a list: adding a kernel
// moves only that kernel's items, and going from N to N+1 shards moves only the items the new
// shard takes. Shards count from 0 (I in 0 .. N-1), as SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX
// and RANK do. Throws UsageError for a spec it cannot read (naming the spec and what it takes).
#pragma once

#include <kjit/export.hpp>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit {

class KJIT_API Shard {
public:
  static constexpr unsigned k_max_count = 10000;

  // The whole: shard 0 of 1 (every item).
  Shard();
  // Shard `index` of `count` (0 <= index < count <= k_max_count); `source` says where the pair came
  // from ("--shard 2/8", "SLURM_ARRAY_TASK_ID=2 ..."). Throws UsageError otherwise.
  Shard(unsigned index, unsigned count, std::string source = {});

  // What --shard takes: "I/N" (0-based), "auto" (from_environment()), or "auto/N" (the index from
  // the environment, N shards: JOB_COMPLETION_INDEX, whose count Kubernetes does not export).
  // `env` reads a variable (tests; default: the process's environment).
  using Environment = std::function<std::optional<std::string>(const char* name)>;
  static Shard parse(std::string_view spec, const Environment& env = {});
  // The shard a job system gave this process, the first found of: SLURM_ARRAY_TASK_ID with
  // SLURM_ARRAY_TASK_COUNT (and SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_STEP: --array=1-8 or
  // 0-14:2), JOB_COMPLETION_INDEX with `count`, RANK with WORLD_SIZE (torchrun, MPI launchers).
  // `count`, when given, must agree with the count found. source() names the variables used.
  // Throws UsageError when none is set, or when what is set does not make a shard.
  static Shard from_environment(std::optional<unsigned> count = std::nullopt, const Environment& env = {});

  unsigned index() const noexcept { return m_index; }
  unsigned count() const noexcept { return m_count; }
  bool whole() const noexcept { return m_count == 1; }
  // Where it came from: "--shard 2/8", "SLURM_ARRAY_TASK_ID=2, SLURM_ARRAY_TASK_COUNT=8", "" (the whole).
  const std::string& source() const noexcept { return m_source; }
  std::string str() const;  // "2/8"

  // The shard (0 .. count-1) of the item whose content key is `key` (32 hex digits, as
  // CompileResult::key and `kjit cache ls` print it). Throws UsageError for anything else.
  unsigned shard_of(std::string_view key) const;
  bool owns(std::string_view key) const { return shard_of(key) == m_index; }

  friend bool operator==(const Shard& a, const Shard& b) { return a.m_index == b.m_index && a.m_count == b.m_count; }

private:
  unsigned m_index = 0, m_count = 1;
  std::string m_source;
  std::vector<std::string> m_names;  // "0" .. "N-1": the rendezvous names
};

}  // namespace kjit
