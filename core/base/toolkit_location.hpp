// kjit::compile::toolkit_roots: where the CUDA toolkit may be, in the order kjit tries them:
// $KJIT_CUDA_HOME, $CUDA_HOME, $CUDA_PATH, the toolkit of the libnvrtc this process loaded, the
// toolkit kjit was built with, /usr/local/cuda. The one list for every toolkit file kjit looks
// for: NVRTC's include dirs, libnvJitLink, nvdisasm and cuobjdump. Never throws.
#pragma once

#include "core/base/tools_api.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kjit::base {

KJIT_TOOLS_API std::vector<std::filesystem::path> toolkit_roots();
// What is wrong with $KJIT_CUDA_HOME, which names the toolkit first (a folder that is not there,
// or has no include/ folder: kjit then looks further down the list), as a message naming it and
// where the toolkit is looked for instead; nullopt when it is unset or looks like a toolkit.
std::optional<std::string> cuda_home_problem();
// Loads libnvrtc-builtins from beside the loaded libnvrtc, once (call it before a compile). NVRTC
// opens it by its name alone, which finds only what the loader's paths find: a toolkit elsewhere
// than those (linked through kjitConfig.cmake's find_dependency) then compiles too. Never throws;
// without it there, NVRTC looks for itself as before.
void load_nvrtc_builtins();
// The folder of the libnvrtc this process loaded (empty when it cannot be told): its siblings
// (libnvJitLink) are of the same toolkit.
std::filesystem::path nvrtc_library_dir();

// Where to look for a toolkit library, in order: its soname (the loader's own search), beside the
// loaded libnvrtc, then <root>/<folder>/<soname> for each toolkit root and each of `folders`.
KJIT_TOOLS_API std::vector<std::string> toolkit_library_candidates(const std::string& soname,
                                                    const std::vector<std::string>& folders = {"lib64"});
// Opening one of them: base::DynamicLibrary::open_first (dynamic_library.hpp).

}  // namespace kjit::base
