// kjit::tune_ahead: decides, on the GPU at hand, every "shapes" entry of kernel manifests'
// "tuning" entries (what `kjit tune` does), with made-up arguments (manifest.hpp), and stores
// each decision in kjit's cache (and the remote tier when one is set), so that a program's
// KernelLoader::tuner<Sig>(file, name) launches its winner without timing anything. Requests
// are made exactly as KernelLoader makes them (runtime/loader/kernel_request), so the keys are
// the same by construction. With a shard (`kjit tune --shard I/N`) it decides only the shapes
// whose decision key goes to that shard. A shape that fails is reported in its item and does not
// stop the others. Throws UsageError for a bad manifest, manifests without a tuning entry that lists
// shapes, or a device ordinal this machine lacks, and DriverNotFoundError without a driver.
#pragma once

#include <kjit/export.hpp>

#include <kjit/runtime.hpp>
#include <kjit/tools/shard.hpp>
#include <kjit/tune.hpp>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kjit {

struct TuneAheadOptions {
  // Folders holding a kjit.json, or manifest files. Empty: the installed kernels_src.
  std::vector<std::filesystem::path> sources;
  int device = 0;      // the CUDA device to time on
  bool force = false;  // time again where a decision is cached (as KJIT_TUNE=force)
  TuneOptions tuning;  // timing (noise, rounds, ...); its compile options come from the manifests
  // Only the shapes whose decision's cache key goes to this shard (shard.hpp); default: every one.
  Shard shard;
  RuntimeConfig runtime = RuntimeConfig::from_environment();  // cache dir, remote, log callback
};

struct TuneAheadItem {
  std::filesystem::path manifest;
  std::string file;     // the kernel file, as in the manifest
  std::string variant;  // "" for a kernel without variants
  std::string name;     // the tuning entry
  std::string shape;    // "n=1048576"
  std::string key;      // the tuning key ("n<=1048576"); empty when the shape failed before it
  std::string device;   // the device's name
  std::optional<TuneDecision> decision;  // unset: failed (see error)
  std::string error;
  double ms = 0;
  std::string report;  // the decision as KJIT_PRINT_TUNING prints it, with the time; empty: failed
};

struct TuneAheadReport {
  std::vector<TuneAheadItem> items;  // in manifest order: kernel, variant, tuning entry, shape
  std::size_t timed = 0, cached = 0, failed = 0;
  Shard shard;                // the one tuned
  std::size_t elsewhere = 0;  // shapes that go to other shards
  double wall_ms = 0;
  std::string device;
  std::filesystem::path cache_dir;
  bool ok() const noexcept { return failed == 0; }
};

// Called as each item finishes, in order.
using TuneAheadProgress = std::function<void(const TuneAheadItem&)>;

KJIT_API TuneAheadReport tune_ahead(const TuneAheadOptions& options, const TuneAheadProgress& progress = {});

}  // namespace kjit
