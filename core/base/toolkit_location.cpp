#include "core/base/toolkit_location.hpp"

#include "core/base/environment.hpp"
#include "core/base/nvrtc_library.hpp"

#include <nvrtc.h>

#include <dlfcn.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <system_error>

namespace kjit::base {

std::filesystem::path nvrtc_library_dir() {
  const std::string file = nvrtc_library_file();  // opened at run time (nvrtc_library.hpp)
  return file.empty() ? std::filesystem::path() : std::filesystem::path(file).parent_path();
}

std::vector<ToolkitVariable> toolkit_variables() {
  std::vector<ToolkitVariable> out;
  if (auto home = env_text(Env::cuda_home)) out.push_back({"KJIT_CUDA_HOME", *home});
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* v = std::getenv(var); v && *v) out.push_back({var, v});
  }
  return out;
}

namespace {

// Why the folder `value` names is no toolkit, or "" when it is one.
std::string not_a_toolkit(const std::string& value) {
  std::error_code ec;
  const std::filesystem::path root(value);
  if (!std::filesystem::is_directory(root, ec)) {
    return std::filesystem::exists(root, ec) ? "is not a folder" : "does not exist";
  }
  if (std::filesystem::is_directory(root / "include", ec) || !nvrtc_files_in(root).empty()) return {};
  return "has no include folder and no libnvrtc (it is no CUDA toolkit)";
}

}  // namespace

std::optional<ToolkitVariable> named_toolkit() {
  for (ToolkitVariable& v : toolkit_variables()) {
    if (not_a_toolkit(v.value).empty()) return std::move(v);
  }
  return std::nullopt;
}

std::vector<std::filesystem::path> toolkit_roots() {
  std::vector<std::filesystem::path> roots;
  for (const ToolkitVariable& v : toolkit_variables()) roots.emplace_back(v.value);
  if (const auto lib = nvrtc_library_dir(); !lib.empty()) {
    // <cuda>/lib64/libnvrtc.so's toolkit is <cuda>; <cuda>/targets/<arch>/lib/libnvrtc.so's is
    // <cuda> too, and <cuda>/targets/<arch> holds its own include/. Never a folder above a toolkit.
    const std::filesystem::path above = lib.parent_path();
    if (above.parent_path().filename() == "targets") {
      roots.push_back(above.parent_path().parent_path());
      roots.push_back(above);
    } else {
      roots.push_back(above);
    }
  }
  roots.push_back(std::filesystem::path(KJIT_CUDA_INCLUDE_DIR).parent_path());
  roots.emplace_back("/usr/local/cuda");
  // Each folder once (several variables and the loaded NVRTC often name the same one).
  std::vector<std::filesystem::path> unique;
  for (auto& r : roots) {
    if (std::find(unique.begin(), unique.end(), r) == unique.end()) unique.push_back(std::move(r));
  }
  return unique;
}

std::optional<std::string> toolkit_variable_problem() {
  std::vector<std::string> problems;
  std::vector<std::filesystem::path> listed;
  std::error_code ec;
  for (const ToolkitVariable& v : toolkit_variables()) {
    const std::string what = not_a_toolkit(v.value);
    if (what.empty()) break;  // the toolkit: the ones after it are not read
    problems.push_back(fmt::format("{}={} {}", v.name, v.value, what));
    listed.push_back(std::filesystem::weakly_canonical(v.value, ec));
  }
  if (problems.empty()) return std::nullopt;
  std::string instead;
  for (const auto& r : toolkit_roots()) {
    // Each folder once: several variables and the loaded NVRTC often name the same one.
    const std::filesystem::path key = std::filesystem::weakly_canonical(r, ec);
    if (std::find(listed.begin(), listed.end(), key) != listed.end()) continue;
    listed.push_back(key);
    if (!instead.empty()) instead += ", ";
    instead += r.string();
  }
  return fmt::format("{}: the CUDA toolkit is looked for in {} instead", fmt::join(problems, "; "), instead);
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
