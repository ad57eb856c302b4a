// kjit::compile::libcudacxx_integers: libcu++'s fixed-width integers as nvcc sees them. Under NVRTC,
// libcu++ (<cuda/std/cstdint>, which CUB, cooperative groups, <cuda/barrier> and <cuda/ptx> all
// include) declares ::int64_t and ::uint64_t itself, as long long; nvcc takes its other branch, the
// host's <cstdint>, where on an LP64 host they are long. So kjit serves the toolkit's file with that
// branch taken: its "#if !_CCCL_COMPILER(NVRTC)" before "#include <cstdint>" reads "#if 1", and
// <cstdint> is kjit's own (long, as glibc's). A kernel taking an int64_t then has nvcc's mangled
// name, and kjit's <cstdint> and libcu++'s agree in either order. A toolkit whose file has another
// layout is served as it is (docs/headers.md). Never throws.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kjit::compile {

// `text` (a libcu++ header that declares the fixed-width integers for NVRTC) with its NVRTC
// condition before "#include <cstdint>" made true, every line in its place; nullopt when the text
// has no such condition.
std::optional<std::string> with_host_integers(std::string_view text);

// (name, content) of the toolkit's libcu++ headers that declare the fixed-width integers under
// NVRTC ("cuda/std/cstdint" in CCCL 3, "cuda/std/__cuda/cstdint_prelude.h" in CCCL 2), each with
// the host's branch taken; read once per process. Empty when the toolkit has none of that layout.
const std::vector<std::pair<std::string, std::string>>& libcudacxx_integer_headers();

}  // namespace kjit::compile
