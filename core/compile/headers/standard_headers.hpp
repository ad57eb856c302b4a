// kjit::compile::standard_headers: the C and C++ standard headers a kernel written for nvcc
// includes (<cmath>, <cstdint>, <type_traits>, <limits>, <algorithm>, <complex>, ... and the .h
// forms of the C ones), which NVRTC does not have, and the nvcc environment (__kjit_nvcc.h: what
// nvcc makes visible without an include, pre-included unless CompileOptions::nvcc_environment is
// off). They are kjit's own, written for device code (runtime/compile/headers/, embedded at build
// time), not libcu++'s: libcu++'s headers take NVRTC up to seconds and, under NVRTC, make every
// static constant they instantiate a module global (docs/headers.md). Host-only headers
// (<iostream>, <vector>, <string>, <map>, <memory>, <thread>, ...) declare their names so that
// host code and prototypes compile, and fail in device code naming the header. NvrtcCompiler
// hands them to NVRTC as in-memory headers, except those a user header of the same name shadows.
// They enter the cache key through kjit's version. Never throws.
#pragma once

#include <string_view>
#include <utility>
#include <vector>

namespace kjit::compile {

// (name, content) of every file under runtime/compile/headers/ ("cmath", "sys/time.h",
// "__kjit_nvcc.h", ...), sorted by name. Generated (cmake/KjitEmbedHeaders.cmake).
const std::vector<std::pair<std::string_view, std::string_view>>& standard_header_files();

// The header NvrtcCompiler pre-includes for the nvcc environment.
inline constexpr std::string_view k_nvcc_environment_header = "__kjit_nvcc.h";

}  // namespace kjit::compile
