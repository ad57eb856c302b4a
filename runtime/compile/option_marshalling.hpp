// kjit::compile::marshal: the one marshalling of already normalized() options to NVRTC
// arguments (canonical_flags() is normalized() then this). The request path normalizes once
// and calls this directly. Throws UsageError when `resolved` is native.
#pragma once

#include <kjit/compile_options.hpp>

#include <string>
#include <vector>

namespace kjit::compile {

std::vector<std::string> marshal(const CompileOptions& normalized_options, const Arch& resolved);

}  // namespace kjit::compile
