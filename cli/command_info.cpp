// kjit info: versions, the NVRTC and toolkit found, the disassembler, devices, supported archs,
// cache dir.
#include "commands.hpp"

#include <kjit/tools/inspect.hpp>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace kjit::cli {
void add_info_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("info", "Versions, the NVRTC library and toolkit found, the SASS disassembler, "
                                         "devices, supported archs and the cache directory");
  cmd->callback([&ctx] {
    std::vector<std::string> archs;
    for (int a : supported_archs()) archs.push_back(fmt::format("sm_{}", a));
    const ToolkitPaths paths = toolkit_paths();
    const std::string root = paths.root();
    const std::optional<std::filesystem::path> disassembler = inspect::find_disassembler();
    bool driver = driver_available();
    nlohmann::json devices = nlohmann::json::array();
    for (int i = 0; driver && i < device_count(); ++i) {
      Device d = Device::get(i);
      devices.push_back({{"ordinal", i}, {"name", d.name()}, {"arch", fmt::format("sm_{}", d.compute_capability())},
                         {"memory_bytes", d.total_memory()}, {"multiprocessors", d.multiprocessor_count()}});
    }
    ctx.cache_required = CacheRequired::never;  // info names the folder, usable or not
    std::string cache_dir = ctx.runtime().cache_dir().string();
    if (ctx.json) {
      nlohmann::json j{{"kjit_version", std::string(version())}, {"nvrtc_version", nvrtc_version()},
                       {"nvrtc_library", json_name(paths.nvrtc_library)}, {"toolkit_root", json_name(root)},
                       {"toolkit_include_dirs", json_names(paths.include_dirs)},
                       {"disassembler", disassembler ? nlohmann::json(json_name(disassembler->string())) : nlohmann::json(nullptr)},
                       {"supported_archs", archs}, {"driver", driver}, {"devices", devices}, {"cache_dir", cache_dir}};
      if (!disassembler) j["disassembler_error"] = inspect::disassembler_unavailable_reason();
      if (!driver) j["driver_error"] = driver_unavailable_reason();
      print_json(j, 2);
      return;
    }
    fmt::print("kjit {}\nNVRTC {} ({})\n", version(), nvrtc_version(),
               paths.nvrtc_library.empty() ? "library file unknown" : paths.nvrtc_library);
    if (root.empty()) {
      fmt::print("toolkit: none found (NVRTC's built-in headers only; set KJIT_CUDA_HOME)\n");
    } else {
      fmt::print("toolkit: {} (headers {})\n", root, fmt::join(paths.include_dirs, ", "));
    }
    if (disassembler) {
      fmt::print("SASS: {}\n", disassembler->string());
    } else {
      fmt::print("SASS: none ({})\n", inspect::disassembler_unavailable_reason());
    }
    fmt::print("supported archs: {}\n", fmt::join(archs, " "));
    if (!driver) {
      fmt::print("driver: none ({})\n  what works without a GPU, with --arch sm_XX: compile (also --link), ptx, {}"
                 "resources, diff, warm, cache explain; and cache stats|ls|verify|prune|clear. Needs a GPU: the "
                 "native arch, tune, profile, launching kernels{}.\n",
                 driver_unavailable_reason(), disassembler ? "sass, " : "",
                 disassembler ? "" : "; sass needs nvdisasm or cuobjdump besides");
    } else {
      fmt::print("devices: {}\n", devices.size());
      for (const auto& d : devices) {
        fmt::print("  {}: {} ({}, {:.1f} GiB, {} SMs)\n", d["ordinal"].get<int>(), d["name"].get<std::string>(),
                   d["arch"].get<std::string>(), d["memory_bytes"].get<double>() / (1ull << 30),
                   d["multiprocessors"].get<int>());
      }
    }
    fmt::print("cache dir: {}\n", cache_dir);
  });
}

}  // namespace kjit::cli
