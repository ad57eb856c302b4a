// kjit::base::toolkit_roots: where the CUDA toolkit may be, in the order kjit tries them:
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

// A toolkit variable that is set: its name and value, in the order kjit reads them.
struct ToolkitVariable {
  std::string name;   // "KJIT_CUDA_HOME", "CUDA_HOME", "CUDA_PATH"
  std::string value;
};
// KJIT_CUDA_HOME, CUDA_HOME and CUDA_PATH, those set (non-empty), in that order.
std::vector<ToolkitVariable> toolkit_variables();
// The toolkit the variables name: the first of them whose folder holds an include/ folder or a
// libnvrtc (nvrtc_files_in). Its NVRTC is the one kjit opens (never another toolkit's with its
// headers: one that cannot be opened is an error naming the file). nullopt when none does.
std::optional<ToolkitVariable> named_toolkit();
// What is wrong with the variables read before a toolkit is found (a folder that is not there, or
// holds neither include/ nor a libnvrtc: kjit then looks further down the list), as a message
// naming each and where the toolkit is looked for instead; nullopt when there is nothing to say.
std::optional<std::string> toolkit_variable_problem();
// Loads libnvrtc-builtins from beside the loaded libnvrtc, once (call it before a compile). NVRTC
// opens it by its name alone, which finds only what the loader's paths find: a toolkit elsewhere
// than those (named by KJIT_CUDA_HOME, CUDA_HOME or CUDA_PATH) then compiles too. Never throws;
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
