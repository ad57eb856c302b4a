// A file of the CUDA toolkit on the machine running the test ("lib64/libcudadevrt.a",
// "bin/fatbinary"), found the way kjit finds its toolkit (base::toolkit_roots): the GPU
// machine's toolkit may live elsewhere than the build machine's.
#pragma once

#include "core/base/toolkit_location.hpp"

#include <filesystem>
#include <system_error>

namespace kjit::test {

inline std::filesystem::path toolkit_file(const std::filesystem::path& relative) {
  const auto roots = base::toolkit_roots();
  std::error_code ec;
  for (const auto& root : roots) {
    if (std::filesystem::exists(root / relative, ec)) return root / relative;
  }
  return roots.back() / relative;  // missing: the error that follows names it
}

}  // namespace kjit::test
