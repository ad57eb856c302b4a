// Interim: reads kernels_src/kjit.json's "instantiate" lists directly; the source loader
// (issue 5) replaces this.
#include "runtime/shipped_kernels.hpp"

#include <kjit/error.hpp>
#include <kjit/program.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>

namespace kjit::runtime {

Module load_shipped(Runtime& runtime, std::string_view file, Device device) {
  const std::filesystem::path dir = KJIT_KERNELS_SRC_DIR;
  std::ifstream in(dir / "kjit.json");
  nlohmann::json manifest = nlohmann::json::parse(in, nullptr, false);
  if (manifest.is_discarded()) throw IoError(fmt::format("reading {}: not valid JSON", (dir / "kjit.json").string()));
  Program program = read_program(dir / file);
  Program named(std::string(file), program.source());
  named.directory(dir);
  for (const auto& k : manifest["kernels"]) {
    if (k["file"] == file) {
      for (const auto& e : k["instantiate"]) named.instantiate(e.get<std::string>());
    }
  }
  CompileOptions options;
  options.include_dirs.push_back(dir);
  return runtime.load(named, options, device);
}

}  // namespace kjit::runtime
