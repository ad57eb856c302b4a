// kjit::compile::toolkit_roots: where the CUDA toolkit may be, in the order kjit tries them:
// $KJIT_CUDA_HOME, $CUDA_HOME, $CUDA_PATH, the toolkit of the libnvrtc this process loaded, the
// toolkit kjit was built with, /usr/local/cuda. The one list for every toolkit file kjit looks
// for: NVRTC's include dirs, libnvJitLink, nvdisasm and cuobjdump. Never throws.
#pragma once

#include <filesystem>
#include <vector>

namespace kjit::compile {

std::vector<std::filesystem::path> toolkit_roots();
// The folder of the libnvrtc this process loaded (empty when it cannot be told): its siblings
// (libnvJitLink) are of the same toolkit.
std::filesystem::path nvrtc_library_dir();

}  // namespace kjit::compile
