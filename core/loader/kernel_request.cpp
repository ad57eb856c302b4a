#include "core/loader/kernel_request.hpp"

#include <kjit/error.hpp>
#include <kjit/loader.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

namespace kjit::loader {

KernelRequest make_kernel_request(const std::filesystem::path& root, const std::string& relative, std::string source,
                                  const ManifestKernel* entry, std::string_view variant,
                                  const std::vector<std::filesystem::path>& search_path,
                                  const CompileOptions& base) {
  std::filesystem::path file = root / relative;
  std::vector<std::filesystem::path> include_path;
  KernelRequest out{Program(relative, std::move(source)), base, {}};
  if (entry) {
    const ManifestVariant& v = entry->variant(variant);
    out.variant = v.name;
    out.options = entry->options_for(v, base);
    for (const auto* dirs : {&entry->options.values.include_dirs, &v.options.values.include_dirs}) {
      include_path.insert(include_path.end(), dirs->begin(), dirs->end());
    }
    for (auto& e : entry->name_expressions_for(v)) out.program.instantiate(std::move(e));
  } else if (!variant.empty()) {
    throw UsageError(fmt::format("looking up variant \"{}\" of kernel file {}: the file has no entry in {}, so it "
                                 "has only the default variant \"\"",
                                 variant, file.string(), (root / Manifest::k_file_name).string()));
  }
  include_path.insert(include_path.end(), search_path.begin(), search_path.end());
  out.program.directory(file.parent_path()).include_path(std::move(include_path));
  return out;
}

namespace {

// What warm and tune take, said where something else was given: a CUDA source (one file is
// `kjit compile`'s), or a folder without a kjit.json. A path that does not exist is left to
// Manifest::read (IoError, naming it).
void check_manifest_source(const std::filesystem::path& source, std::string_view doing) {
  std::error_code ec;
  const auto status = std::filesystem::status(source, ec);
  const std::string takes = fmt::format(
      "{} takes folders holding a {} or manifest files (docs/manifest.md); one source file is compiled with kjit "
      "compile FILE (Runtime::compile)",
      doing, Manifest::k_file_name);
  if (std::filesystem::is_directory(status)) {
    if (!std::filesystem::exists(source / Manifest::k_file_name, ec)) {
      throw UsageError(fmt::format("{} {}: the folder holds no {}; {}", doing, source.string(), Manifest::k_file_name,
                                   takes));
    }
    return;
  }
  static constexpr std::string_view k_sources[] = {".cu", ".cuh", ".h", ".hpp", ".hh", ".c", ".cc", ".cpp", ".cxx",
                                                   ".ptx", ".cubin", ".fatbin", ".ltoir", ".o", ".a"};
  const std::string extension = source.extension().string();
  if (std::filesystem::exists(status) &&
      std::find(std::begin(k_sources), std::end(k_sources), extension) != std::end(k_sources)) {
    throw UsageError(fmt::format("{} {}: a source or device-code file, not a kernel manifest; {}", doing,
                                 source.string(), takes));
  }
}

}  // namespace

ManifestSet read_manifests(std::vector<std::filesystem::path> sources, std::string_view doing) {
  if (sources.empty()) {
    auto installed = KernelLoader::installed_kernels_dir();
    if (installed.empty()) throw UsageError(fmt::format("{} the installed kernels_src: kjit finds none", doing));
    sources.push_back(installed);
  }
  ManifestSet out;
  for (const auto& s : sources) {
    check_manifest_source(s, doing);
    auto m = std::make_shared<const Manifest>(Manifest::read(s));
    out.roots.push_back(m->dir());
    out.manifests.push_back(std::move(m));
  }
  return out;
}

}  // namespace kjit::loader
