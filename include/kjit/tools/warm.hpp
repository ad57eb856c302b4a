// kjit::warm: compiles every kernel x variant x arch of one or more kernel manifests into the
// disk cache ahead of time (what `kjit warm` does), with at most `jobs` NVRTC compiles at once.
// Needs no GPU when the archs are named. A kernel that fails to compile is reported in its item
// and does not stop the others. Requests are made exactly as KernelLoader makes them, so a
// later lookup through a loader whose search path holds the same files hits the cache.
// Throws before compiling anything for a bad manifest (UsageError), an unsupported arch
// (UsageError), or native without a GPU (UsageError saying to name the archs).
#pragma once

#include <kjit/export.hpp>

#include <kjit/compile_options.hpp>
#include <kjit/compile_result.hpp>
#include <kjit/runtime.hpp>

#include <cstddef>
#include <filesystem>
#include <functional>
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
  std::vector<WarmItem> items;  // in manifest order: kernel, variant, arch
  std::size_t compiled = 0, cached = 0, failed = 0;
  double wall_ms = 0;
  unsigned jobs = 0;
  std::filesystem::path cache_dir;
  bool ok() const noexcept { return failed == 0; }
};

KJIT_API WarmReport warm(const WarmOptions& options, const WarmProgress& progress = {});

}  // namespace kjit
