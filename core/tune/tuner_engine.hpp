// kjit::TunerEngine::Impl: what one tuner holds (its program or preloaded kernels, candidates,
// options, the Runtime it loads through), the candidates' kernels, each loaded once, and its
// decisions by tuning key. Deciding (tune/tuner.cpp) and the spec's launch (tune/spec_launch.cpp)
// share it. Internal to runtime/tune/.
#pragma once

#include <kjit/tune.hpp>

#include "core/cache/key.hpp"
#include "core/tune/decision.hpp"
#include "core/tune/published_table.hpp"
#include "core/tune/spec.hpp"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kjit {

namespace tune {
// Throws UsageError when the kernel's parameters do not have the spec's argument sizes.
void check_against_spec(const KernelHandle& kernel, const TuneSpec& spec);
}  // namespace tune

// Hidden: its lambdas must not join libkjit's exports (TunerEngine is KJIT_API, and nested types inherit it).
struct __attribute__((visibility("hidden"))) TunerEngine::Impl {
  Program program;
  std::string source_key;  // for preloaded kernels; else computed from the program
  std::optional<tune::CompiledSpec> spec;
  std::vector<TuneCandidate> candidates;
  TuneOptions options;
  Runtime* runtime;
  TuneMode mode;
  bool print;

  // Candidates' kernels: loaded once each (compile errors kept, so a failed one fails once).
  std::vector<std::once_flag> loaded;
  std::vector<KernelHandle> kernels;
  std::vector<std::string> load_errors;

  // Decisions by tuning key text, read without the lock (a decided key's launch); added, and
  // provisional ones kept, under `mutex`, which deciding holds (one timing at a time).
  mutable std::mutex mutex;
  struct Held {
    std::string key;
    TuneDecision decision;
  };
  tune::PublishedTable<Held> decisions;
  std::map<std::string, std::unique_ptr<TuneDecision>, std::less<>> provisional;  // Source::capture, by key text
  // A spec's decided calls by shape, read without the lock: a repeat of a shape launches with no
  // key text and no grid evaluation. At most k_remembered_shapes (exact values, so a program whose
  // sizes keep changing would grow it without end); past them a shape is keyed each call, still
  // without the lock or the heap.
  static constexpr std::size_t k_remembered_shapes = 256;
  struct ShapeCall {
    std::vector<std::string> names;
    std::vector<long long> values;
    const TuneDecision* decision = nullptr;
    const KernelHandle* kernel = nullptr;
    LaunchConfig config;  // without the stream
    bool matches(std::span<const TuneValue> shape) const {
      if (shape.size() != names.size()) return false;
      for (std::size_t i = 0; i < names.size(); ++i) {
        if (shape[i].value != values[i] || shape[i].name != names[i]) return false;
      }
      return true;
    }
  };
  tune::PublishedTable<ShapeCall> shapes;
  std::atomic<std::uint64_t> timed{0}, from_cache{0};
  mutable std::atomic<std::uint64_t> in_memory{0};

  Impl(Program p, std::vector<TuneCandidate> c, TuneOptions o, Runtime& r);
  Impl(std::string name, std::string key, std::vector<TuneCandidate> c, std::vector<KernelHandle> k, TuneOptions o,
       Runtime& r);
  Impl(Program p, TuneSpec s, TuneOptions o, Runtime& r);

  const tune::CompiledSpec& require_spec(std::string_view what) const;
  // The tuner's name in reports and decisions: the program's, and the spec's after a colon.
  std::string name() const;
  CompileOptions options_for(std::size_t i) const;
  // Loads candidate i once; false (and its error kept) when it does not compile or load.
  bool load(std::size_t i);
  std::string label(std::size_t i) const;
  // The decision held for `key` (no lock, no allocation), or null.
  const TuneDecision* held(std::string_view key) const;
  cache::Key decision_key(const TuneKey& key);
  TuneDecision from(const tune::Decision& d, TuneDecision::Source source, const cache::Key& key) const;
  void report(const TuneDecision& d, const TuneKey& key) const;
  // Candidate i's launch configuration with `grid` (spec_launch.cpp).
  LaunchConfig config(std::size_t i, Dim3 grid, CUstream_st* stream) const;
  // Times the allowed candidates on `run` (successive halving) and stores the decision under `dkey`.
  TuneDecision tune(const TuneKey& key, const Run& run, const TuneBuffers& buffers, CUstream_st* stream,
                    const cache::Key& dkey, const std::vector<bool>& allowed);
};

}  // namespace kjit
