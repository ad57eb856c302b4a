#include "runtime/loader/kernel_request.hpp"

#include <kjit/error.hpp>
#include <kjit/loader.hpp>

#include <fmt/format.h>

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
    for (const auto* dirs : {&entry->options.include_dirs, &v.options.include_dirs}) {
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

ManifestSet read_manifests(std::vector<std::filesystem::path> sources, std::string_view doing) {
  if (sources.empty()) {
    auto installed = KernelLoader::installed_kernels_dir();
    if (installed.empty()) throw UsageError(fmt::format("{} the installed kernels_src: kjit finds none", doing));
    sources.push_back(installed);
  }
  ManifestSet out;
  for (const auto& s : sources) {
    auto m = std::make_shared<const Manifest>(Manifest::read(s));
    out.roots.push_back(m->dir());
    out.manifests.push_back(std::move(m));
  }
  return out;
}

}  // namespace kjit::loader
