// kjit::compile::marshal: the one marshalling of already normalized() options to NVRTC
// arguments (canonical_flags() is normalized() then this). The request path normalizes once
// and calls this directly. Throws UsageError when `resolved` is native.
#pragma once

#include <kjit/compile_options.hpp>

#include <string>
#include <vector>

namespace kjit {
// The options with every understood raw flag folded into its typed field (arch included) and
// the rest kept in order: one spelling of each (kjit's own parts and tests; canonical_flags()
// normalizes first).
CompileOptions normalized(const CompileOptions& options);
}  // namespace kjit

namespace kjit::compile {

std::vector<std::string> marshal(const CompileOptions& normalized_options, const Arch& resolved);

}  // namespace kjit::compile
