// kjit::compile::marshal: the one marshalling of already normalized() options to NVRTC
// arguments (canonical_flags() is normalized() then this). The request path normalizes once
// and calls this directly. Throws UsageError when `resolved` is native.
#pragma once

#include "core/base/tools_api.hpp"

#include <kjit/compile_options.hpp>

#include <string>
#include <vector>

namespace kjit {
// The options with every understood raw flag folded into its typed field (arch included), nvcc's
// spellings translated to NVRTC's, NVRTC's own options kept in order: one spelling of each
// (kjit's own parts and tests; canonical_flags() normalizes first). nvcc's host-only flags are
// dropped; with `dropped`, one message each is added there (once per distinct flag) for the
// caller to log as a warning: only the facade (runtime.cpp) collects them, once per request,
// though a request may be normalized again further down. Throws UsageError for a flag neither
// NVRTC nor nvcc has (naming the closest option), a bad value, or flags asking for two archs.
KJIT_TOOLS_API CompileOptions normalized(const CompileOptions& options, std::vector<std::string>* dropped = nullptr);
}  // namespace kjit

namespace kjit::compile {

std::vector<std::string> marshal(const CompileOptions& normalized_options, const Arch& resolved);

}  // namespace kjit::compile
