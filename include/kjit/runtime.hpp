// kjit::Runtime: the request path. load() goes registry (already loaded in this process) ->
// disk cache -> NVRTC; compile() goes disk cache -> NVRTC and needs no GPU. A Runtime is
// thread-safe; Runtime::global() is configured from the environment (KJIT_CACHE_DIR,
// KJIT_CACHE_MAX_SIZE, KJIT_CACHE_DISABLE, KJIT_ALWAYS_COMPILE, KJIT_DUMP_DIR, KJIT_LOG,
// KJIT_LOCK_TIMEOUT, KJIT_LOCK_STALE_AFTER, KJIT_CACHE_SHARED, KJIT_REMOTE_*). Throws CompileError, CudaError,
// DriverNotFoundError, UsageError.
#pragma once

#include <kjit/export.hpp>

#include <kjit/compile_options.hpp>
#include <kjit/compile_result.hpp>
#include <kjit/device.hpp>
#include <kjit/link.hpp>
#include <kjit/log.hpp>
#include <kjit/module.hpp>
#include <kjit/program.hpp>
#include <kjit/runtime_config.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kjit {

class KJIT_API Runtime {
public:
  static Runtime& global();
  // RuntimeConfig::from_environment().
  Runtime();
  // Throws UnavailableError for a cache folder it cannot use when config.cache_required asks for
  // it, UsageError for a remote cache address or secret file it cannot use.
  explicit Runtime(RuntimeConfig config);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Compile (or take from the disk cache) for options.arch; native resolves to the current
  // device's arch. Needs no GPU for a named arch.
  CompileResult compile(const Program& program, const CompileOptions& options);
  // Compile or take from the cache, then load on `device`; a repeated request returns the
  // module already loaded.
  Module load(const Program& program, const CompileOptions& options = {},
              std::optional<Device> device = std::nullopt);
  // Links the programs and device code of `link` with nvJitLink (include/kjit/link.hpp): the
  // programs compiled with `options` as relocatable code, each through the cache, then one link
  // cached like a compile. options.arch native resolves to the current device; a named (real)
  // arch needs no GPU. Throws LinkError for a link nvJitLink refuses, CompileError for a program.
  CompileResult link(const Link& link, const CompileOptions& options = {});
  // link(), then loaded on `device` (native: its arch) through the registry.
  Module load(const Link& link, const CompileOptions& options = {}, std::optional<Device> device = std::nullopt);
  // Loads a result compile() returned on `device`, through the same registry: a result whose
  // module is already loaded there (same key) returns that module.
  Module load(CompileResult result, std::optional<Device> device = std::nullopt);

  // The arch a request for `arch` compiles to: a named arch checked against NVRTC, native
  // resolved for `device` (default: the current one; needs a driver). Throws UsageError.
  Arch resolve(const Arch& arch, std::optional<Device> device = std::nullopt) const;

  // The key a request would use, with every field that went into it, in order.
  struct KeyExplanation {
    std::string key;                                          // 32 hex digits
    std::vector<std::pair<std::string, std::string>> fields;  // label, value (long values summarized)
  };
  KeyExplanation explain(const Program& program, const CompileOptions& options);

  const RuntimeConfig& config() const;
  std::filesystem::path cache_dir() const;
  RuntimeStats stats() const;
  // Writes this process's cache counters into the cache directory's persistent stats.
  void flush_stats();

private:
  // Delivers a message the caller asked for (load_inline's verbose, KJIT_PRINT_TUNING) to the log
  // callback (or stderr) at info, whatever the configured level. Reached through RuntimeAccess.
  void report(std::string_view message) const;
  // A message at `level`, delivered as the Runtime's own are (its configured level applies).
  void log(LogLevel level, std::string_view message) const;

  friend struct RuntimeAccess;  // kjit's own parts (the tuner) reach its entry store
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

// NVRTC made ready before the first compile needs it (docs/embedding.md#nvrtc-ready-ahead): on a
// thread of its own, once a process, libnvrtc is opened (found as a compile would find it), its
// builtins library loaded, the toolkit's headers found and an empty kernel compiled (NVRTC's
// once-per-process set-up), so that a first compile costs what a later one does. Returns at once;
// Wait::yes returns when it is done. A Runtime made with RuntimeConfig::prepare on (KJIT_PREPARE,
// the default) calls it, and so does `import kjit`; a program whose first request comes after its
// own start-up (CUDA init, reading its data) calls it first thing. No output changes (no key, PTX,
// cubin or log). A program that compiles nothing pays a thread and NVRTC's memory, never time on
// its own threads, except that exit() waits for a step in flight (at most the empty kernel's
// compile, a few milliseconds). Never throws: a failure is said by the first compile.
enum class Wait { no, yes };
KJIT_API void prepare(Wait wait = Wait::no);
// prepare() when config.prepare is on (what a Runtime made with `config` does).
KJIT_API void prepare(const RuntimeConfig& config);
// A libnvrtc to open when none of kjit's own places has one (the one in the process, the toolkit
// KJIT_CUDA_HOME, CUDA_HOME or CUDA_PATH names, the loader's, the build's): tried after them, in the
// order added. The Python package names those of pip's CUDA packages (torch's nvidia/cu13).
KJIT_API void add_nvrtc_fallback(const std::filesystem::path& library);

// The NVRTC version as "13.0", and the real archs it can compile for (75, 80, ...).
KJIT_API std::string nvrtc_version();
KJIT_API std::vector<int> supported_archs();
KJIT_API std::string_view version();  // kjit's own

// Where kjit found the toolkit it compiles with: the file of the libnvrtc this process loaded
// (a toolkit's, or a pip package's such as torch's nvidia/cu13), and the include folders NVRTC
// is given (empty: NVRTC's built-in headers only). Never throws.
struct ToolkitPaths {
  std::string nvrtc_library;
  std::vector<std::string> include_dirs;
  // The toolkit's folder: the one holding the last of include_dirs named include/ ("" with NVRTC's
  // built-in headers only).
  std::string root() const {
    for (auto it = include_dirs.rbegin(); it != include_dirs.rend(); ++it) {
      const std::filesystem::path dir(*it);
      if (dir.filename() == "include") return dir.parent_path().string();
    }
    return {};
  }
};
KJIT_API ToolkitPaths toolkit_paths();

// What a Runtime calls with each request's result (compiles, and hits when the config asks for
// them) when its config names a dump folder (KJIT_DUMP_DIR). The writer makes one hook per
// Runtime from its config and its log. libkjit writes no dumps itself: libkjit_tools installs its
// writer (kjit::install_tools(), <kjit/tools.hpp>); a Runtime made before that, or in a program
// without the tools, says once that nothing writes its dumps. Set before Runtimes are made.
using ResultHook = std::function<void(const Program&, const CompileResult&)>;
using DumpWriter = std::function<ResultHook(const RuntimeConfig&, std::function<void(LogLevel, std::string_view)>)>;
KJIT_API void set_dump_writer(DumpWriter writer);

}  // namespace kjit
