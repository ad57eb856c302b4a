// kjit::KernelLoader: loads kernels by file name from a search path, with their options from
// each folder's kjit.json manifest (see manifest.hpp). The search path is KJIT_KERNEL_PATH
// (colon-separated), then LoaderOptions::folders, then the kernels_src installed with kjit.
// A file found under root R is the Program named by its path relative to R ("nn/gelu.cu"), so
// compile errors and dumps name the real file; R/kjit.json's entry gives its options,
// name expressions and variants (no entry: default options). `#include "..."` resolves in the
// including file's folder, then the entry's include dirs, then along the search path.
//
// Hot reload (LoaderOptions::hot_reload or KJIT_HOT_RELOAD=1): every lookup checks the file,
// everything it includes and the manifest (stat; the content is re-hashed when the stat
// changed) and, when something changed, returns a kernel compiled from the new text (the cache
// keeps the old entry). Off, a repeated lookup of a (file, variant, device) is a hash-map
// lookup: no stat, no file read. Kernel::launch is the same either way. Thread-safe.
//
// Throws IoError for a file not on the search path (listing it) or unreadable, UsageError for
// an unknown variant (listing the known ones) or a bad manifest, and what Runtime throws.
#pragma once

#include <kjit/export.hpp>

#include <kjit/compile_options.hpp>
#include <kjit/compile_result.hpp>
#include <kjit/device.hpp>
#include <kjit/module.hpp>
#include <kjit/program.hpp>
#include <kjit/runtime.hpp>
#include <kjit/tune.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kjit {

struct LoaderOptions {
  std::vector<std::filesystem::path> folders;  // searched after KJIT_KERNEL_PATH, before the installed kernels
  bool use_environment = true;                 // read KJIT_KERNEL_PATH and KJIT_HOT_RELOAD
  bool use_installed = true;                   // search the kernels_src installed with kjit last
  bool hot_reload = false;                     // or KJIT_HOT_RELOAD=1 (with use_environment)
  CompileOptions options;                      // under every manifest's options (arch: for load())
};

class KJIT_API KernelLoader {
public:
  explicit KernelLoader(LoaderOptions options = {}, Runtime& runtime = Runtime::global());
  ~KernelLoader();
  KernelLoader(const KernelLoader&) = delete;
  KernelLoader& operator=(const KernelLoader&) = delete;

  // Compiles (or takes from the disk cache) `file`'s `variant` for `arch`; needs no GPU for a
  // named arch. An empty variant is the default: the first one listed, or "" without variants.
  CompileResult compile(std::string_view file, std::string_view variant, const Arch& arch);
  // Compiles or takes from the cache, then loads on `device` (default: the current one).
  Module load(std::string_view file, std::string_view variant = {}, std::optional<Device> device = std::nullopt);
  template <class Signature>
  Kernel<Signature> kernel(std::string_view file, std::string_view kernel_name, std::string_view variant = {}) {
    return load(file, variant).template kernel<Signature>(kernel_name);
  }

  struct Located {
    std::filesystem::path root;  // the search root it was found under
    std::string relative;        // its path under root: the Program's name
    std::filesystem::path path;  // root / relative
  };
  // Where `file` (a path relative to a search root) is found first.
  Located find(std::string_view file) const;
  // What a lookup compiles: the Program and options (arch from LoaderOptions::options).
  std::pair<Program, CompileOptions> request(std::string_view file, std::string_view variant = {}) const;

  // The "tuning" entry `name` of `file`'s manifest entry (UsageError listing the known ones).
  TuneSpec tuning(std::string_view file, std::string_view name) const;
  // A tuner over that entry, its candidates compiled from `file`'s `variant` as load() compiles
  // it (options.compile is the loader's); `kjit tune` stores decisions this tuner finds.
  template <class Signature>
  Tuner<Signature> tuner(std::string_view file, std::string_view name, std::string_view variant = {},
                         TuneOptions options = {}) {
    auto [program, compile] = request(file, variant);
    options.compile = std::move(compile);
    return Tuner<Signature>(std::move(program), tuning(file, name), std::move(options), runtime());
  }

  // Every search root, in order (absolute; folders that do not exist are left out).
  const std::vector<std::filesystem::path>& search_path() const;
  bool hot_reload() const;
  Runtime& runtime() const;

  // The kernels_src installed with kjit (<libdir>/../share/kjit/kernels_src, else the
  // configured install or source folder), or empty when none exists.
  static std::filesystem::path installed_kernels_dir();

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

}  // namespace kjit
