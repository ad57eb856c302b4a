// kjit::warm: compiles every kernel x variant x arch of one or more kernel manifests into the
// disk cache ahead of time (what `kjit warm` does), with at most `jobs` NVRTC compiles at once.
// Needs no GPU when the archs are named. A kernel that fails to compile is reported in its item
// and does not stop the others. Requests are made exactly as KernelLoader makes them, so a
// later lookup through a loader whose search path holds the same files hits the cache.
// With a shard (`kjit warm --shard I/N`: shard.hpp) it compiles only the items whose cache key
// goes to that shard, so that N processes or machines split the work and each item is compiled
// once; with a bundle it then writes exactly the entries it warmed (compiled or found cached)
// into one signed bundle, for `kjit cache bundle merge` (cache.hpp).
// Throws before compiling anything for a bad manifest (UsageError), an unsupported arch
// (UsageError), or native without a GPU (UsageError saying to name the archs).
#pragma once

#include <kjit/export.hpp>

#include <kjit/compile_options.hpp>
#include <kjit/compile_result.hpp>
#include <kjit/runtime.hpp>
#include <kjit/tools/cache.hpp>
#include <kjit/tools/shard.hpp>

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kjit {

struct WarmOptions {
  // Folders holding a kjit.json, or manifest files. Empty: the installed kernels_src.
  std::vector<std::filesystem::path> sources;
  std::vector<Arch> archs;              // empty: native (the current device; needs a GPU)
  unsigned jobs = 0;                    // NVRTC compiles at once; 0: the number of hardware threads
  bool precompiled_headers = true;      // NVRTC PCH in a folder private to this call
  RuntimeConfig runtime = RuntimeConfig::from_environment();  // cache dir, log callback, ...
  // Only the items of this shard (by their cache keys); the default: every item.
  Shard shard;
  // When set: after warming, the entries of this warm's items (compiled or found cached) go into
  // this bundle, replaced whole, signed with the runtime's keys (remote_signing_key_file, else
  // remote_secret_file, else unsigned; docs/bundles.md). Needs the disk cache (not disabled).
  std::filesystem::path bundle;
};

enum class WarmStatus { compiled, cached, failed };
KJIT_API std::string_view to_string(WarmStatus status);

struct WarmItem {
  std::filesystem::path manifest;
  std::string file;       // as in the manifest (the Program's name)
  std::string variant;    // "" for a kernel without variants
  Arch arch = Arch::sm(0);
  WarmStatus status = WarmStatus::failed;
  PchUse pch = PchUse::none;
  double ms = 0;          // wall time of this item (NVRTC's time when compiled)
  std::string key;        // cache key (empty when failed)
  std::string error;      // the failure, with NVRTC's log and the source excerpt
};

// A progress event: an item started or finished; `running` is how many compiles are in
// flight now (never more than jobs). Calls are serialized.
struct WarmEvent {
  enum class Kind { started, finished } kind;
  const WarmItem& item;
  std::size_t finished = 0, total = 0, running = 0;
};
using WarmProgress = std::function<void(const WarmEvent&)>;

struct WarmReport {
  std::vector<WarmItem> items;  // this shard's, in manifest order: kernel, variant, arch
  std::size_t compiled = 0, cached = 0, failed = 0;
  Shard shard;                  // the one warmed
  std::size_t elsewhere = 0;    // items of the manifests that go to other shards
  std::optional<CacheExportResult> bundle;  // with WarmOptions::bundle; its `missing` count as failures
  double wall_ms = 0;
  unsigned jobs = 0;
  std::filesystem::path cache_dir;
  bool ok() const noexcept { return failed == 0 && (!bundle || bundle->missing.empty()); }
};

KJIT_API WarmReport warm(const WarmOptions& options, const WarmProgress& progress = {});

}  // namespace kjit
