// kjit::loader::make_kernel_request: the one place a kernel file of a search root becomes the
// (Program, CompileOptions) that is compiled. The source loader's lookups and `kjit warm` both
// call it, so their cache keys are the same by construction. Throws UsageError for an unknown
// variant.
#pragma once

#include "core/base/tools_api.hpp"

#include <kjit/compile_options.hpp>
#include <kjit/manifest.hpp>
#include <kjit/program.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::loader {

struct KernelRequest {
  Program program;
  CompileOptions options;
  std::string variant;  // the variant's real name ("" for the default of a kernel without variants)
};

// `relative`: the file's path under `root` (the Program's name); `entry`: its manifest entry
// or null (default options); `search_path`: every search root, in order (quoted includes
// resolve in the including file's folder, then the entry's include dirs, then these);
// `base`: the caller's options, under the manifest's (its arch is kept).
KJIT_TOOLS_API KernelRequest make_kernel_request(const std::filesystem::path& root, const std::string& relative, std::string source,
                                  const ManifestKernel* entry, std::string_view variant,
                                  const std::vector<std::filesystem::path>& search_path,
                                  const CompileOptions& base);

// The manifests a build step reads (kjit warm, kjit tune): `sources` (folders holding a
// kjit.json, or manifest files), or the installed kernels_src when empty; `doing` ("warming")
// names the step in the error when none is installed. Throws what Manifest::read throws.
struct ManifestSet {
  std::vector<std::shared_ptr<const Manifest>> manifests;
  std::vector<std::filesystem::path> roots;  // each manifest's folder, in order
};
KJIT_TOOLS_API ManifestSet read_manifests(std::vector<std::filesystem::path> sources, std::string_view doing);

}  // namespace kjit::loader
