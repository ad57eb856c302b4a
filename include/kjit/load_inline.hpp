// kjit::load_inline: PyTorch's load_inline in C++. Compiles (or takes from the cache) the
// source, loads it on the current device and checks that each named function exists.
// Throws like Runtime::load, and UsageError naming a missing function and those present.
#pragma once

#include <kjit/export.hpp>

#include <kjit/module.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace kjit {

struct LoadInlineOptions {
  std::string name;
  std::string cuda_sources;
  std::vector<std::string> functions;          // kernel names that must exist
  std::vector<std::string> extra_cuda_cflags;  // NVRTC flags (-O1..-O3 accepted)
  std::filesystem::path build_directory;       // the cache dir for this call; empty: default
  bool verbose = false;                        // report the outcome (hit/compiled), key and the compile's log, at info
};

KJIT_API Module load_inline(const LoadInlineOptions& options);

}  // namespace kjit
