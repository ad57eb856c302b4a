// kjit info: versions, devices, supported archs, cache dir.
#include "commands.hpp"

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace kjit::cli {

void add_info_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("info", "Versions, devices, supported archs and the cache directory");
  cmd->callback([&ctx] {
    std::vector<std::string> archs;
    for (int a : supported_archs()) archs.push_back(fmt::format("sm_{}", a));
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
                       {"supported_archs", archs}, {"driver", driver}, {"devices", devices}, {"cache_dir", cache_dir}};
      if (!driver) j["driver_error"] = driver_unavailable_reason();
      print_json(j, 2);
      return;
    }
    fmt::print("kjit {}\nNVRTC {}\nsupported archs: {}\n", version(), nvrtc_version(), fmt::join(archs, " "));
    if (!driver) {
      fmt::print("driver: none ({})\n  what works without a GPU, with --arch sm_XX: compile (also --link), ptx, sass, "
                 "resources, diff, warm, cache explain; and cache stats|ls|verify|prune|clear. Needs a GPU: the "
                 "native arch, tune, profile, launching kernels.\n",
                 driver_unavailable_reason());
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
