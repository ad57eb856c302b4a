// kjit_loader_probe: a fresh process that looks up every kernel x variant of kernel manifests
// through the public loader API (KernelLoader::compile, no GPU) and prints what its Runtime
// did, for the warming proof in tests/unit/test_cli_warm.cpp. Uses include/kjit only.
//
//   kjit_loader_probe CACHE_DIR ARCH DIR...
//       DIR: folders holding a kjit.json (also the loader's search folders, in order).
//       Prints one JSON object: lookups, disk_hits, compiles, misses, waits, damaged,
//       store_failures, warnings (every log message at warn or above). Exit 0, or 2 on an error.
#include <kjit/tools.hpp>
#include <kjit/loader.hpp>
#include <kjit/manifest.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <mutex>

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: kjit_loader_probe CACHE_DIR ARCH DIR...\n");
    return 2;
  }
  try {
    std::mutex mutex;
    std::vector<std::string> warnings;
    kjit::RuntimeConfig config;
    config.cache_dir = argv[1];
    config.log_level = kjit::LogLevel::warn;
    config.log = [&](kjit::LogLevel, std::string_view message) {
      std::lock_guard lock(mutex);
      warnings.emplace_back(message);
    };
    kjit::Arch arch = kjit::Arch::parse(argv[2]);
    std::vector<std::filesystem::path> dirs(argv + 3, argv + argc);
    std::uint64_t lookups = 0;
    kjit::RuntimeStats stats;
    {
      kjit::Runtime rt(config);
      kjit::KernelLoader loader({.folders = dirs, .use_environment = false}, rt);
      for (const auto& dir : dirs) {
        kjit::Manifest manifest = kjit::Manifest::read(dir);
        for (const auto& kernel : manifest.kernels()) {
          for (const auto& variant : kernel.variants) {
            loader.compile(kernel.file, variant.name, arch);
            ++lookups;
          }
        }
      }
      stats = rt.stats();
    }
    nlohmann::json out{{"lookups", lookups}, {"disk_hits", stats.disk_hits}, {"compiles", stats.compiles},
                       {"misses", stats.misses}, {"waits", stats.waits}, {"damaged", stats.damaged},
                       {"store_failures", stats.store_failures}, {"warnings", warnings}};
    std::printf("%s\n", out.dump().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kjit_loader_probe: %s\n", e.what());
    return 2;
  }
}
