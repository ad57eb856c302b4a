#include "core/base/toolkit_location.hpp"

#include "core/base/environment.hpp"
#include "core/base/nvrtc_library.hpp"

#include <nvrtc.h>

#include <dlfcn.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <system_error>

namespace kjit::base {

std::filesystem::path nvrtc_library_dir() {
  const std::string file = nvrtc_library_file();  // opened at run time (nvrtc_library.hpp)
  return file.empty() ? std::filesystem::path() : std::filesystem::path(file).parent_path();
}

std::vector<std::filesystem::path> toolkit_roots() {
  std::vector<std::filesystem::path> roots;
  if (auto home = env_text(Env::cuda_home)) roots.emplace_back(*home);
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* v = std::getenv(var); v && *v) roots.emplace_back(v);
  }
  if (const auto lib = nvrtc_library_dir(); !lib.empty()) {
    roots.push_back(lib.parent_path());                // <cuda>/lib64/libnvrtc.so
    roots.push_back(lib.parent_path().parent_path());  // <cuda>/targets/<arch>/lib/libnvrtc.so
  }
  roots.push_back(std::filesystem::path(KJIT_CUDA_INCLUDE_DIR).parent_path());
  roots.emplace_back("/usr/local/cuda");
  return roots;
}

std::optional<std::string> cuda_home_problem() {
  const auto home = env_text(Env::cuda_home);
  if (!home) return std::nullopt;
  std::error_code ec;
  const std::filesystem::path root(*home);
  std::string what;
  if (!std::filesystem::is_directory(root, ec)) {
    what = std::filesystem::exists(root, ec) ? "is not a folder" : "does not exist";
  } else if (!std::filesystem::is_directory(root / "include", ec)) {
    what = "has no include folder (it is no CUDA toolkit)";
  } else {
    return std::nullopt;
  }
  std::string instead;
  std::vector<std::filesystem::path> listed{std::filesystem::weakly_canonical(root, ec)};
  for (const auto& r : toolkit_roots()) {
    // Each folder once: several variables and the loaded NVRTC often name the same one.
    const std::filesystem::path key = std::filesystem::weakly_canonical(r, ec);
    if (std::find(listed.begin(), listed.end(), key) != listed.end()) continue;
    listed.push_back(key);
    if (!instead.empty()) instead += ", ";
    instead += r.string();
  }
  return fmt::format("KJIT_CUDA_HOME={} {}: the CUDA toolkit is looked for in {} instead", *home, what, instead);
}

void load_nvrtc_builtins() {
  static const bool loaded = [] {
    const auto dir = nvrtc_library_dir();
    if (dir.empty()) return false;
    int major = 0, minor = 0;
    nvrtcVersion(&major, &minor);
    const std::string name = "libnvrtc-builtins.so." + std::to_string(major) + "." + std::to_string(minor);
    // Never closed: NVRTC's own dlopen by that name (its soname) then finds this one.
    return ::dlopen((dir / name).c_str(), RTLD_NOW | RTLD_GLOBAL) != nullptr;
  }();
  (void)loaded;
}

std::vector<std::string> toolkit_library_candidates(const std::string& soname, const std::vector<std::string>& folders) {
  std::vector<std::string> out{soname};
  if (const auto beside = nvrtc_library_dir(); !beside.empty()) out.push_back((beside / soname).string());
  for (const auto& root : toolkit_roots()) {
    for (const auto& folder : folders) out.push_back((root / folder / soname).string());
  }
  return out;
}

}  // namespace kjit::base
