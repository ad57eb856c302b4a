// kjit::compile::NvrtcInfo: what the NVRTC kjit compiles with is, asked of it (or found) once: its
// version, the real archs it compiles to, whether it keeps a compile cache of its own, and the
// include folders of the toolkit it belongs to. The options, the source readers and the compile
// above all ask here, none asks NvrtcCompiler. NVRTC is opened at run time (core/base/
// nvrtc_library): without one, version() and supported_archs() throw UnavailableError saying where
// kjit looked.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kjit::compile {

class NvrtcInfo {
public:
  // "13.0"
  static std::string version();
  // Whether this NVRTC (12.9+) has a compile cache of its own; NvrtcCompiler turns it off
  // (--no-cache), so that every compile runs ptxas and its log says so.
  static bool has_own_cache();
  // Real archs NVRTC can compile to (75, 80, ..., 120); empty when NVRTC cannot say.
  static std::vector<int> supported_archs();
  // The toolkit's include dirs (CUDA headers and CCCL), found once; empty when no toolkit is found
  // (NVRTC's built-in headers still work).
  static const std::vector<std::filesystem::path>& toolkit_include_dirs();
};

}  // namespace kjit::compile
