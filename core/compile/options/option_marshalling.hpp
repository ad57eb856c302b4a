// kjit::compile::NormalizedOptions and marshal: options normalized once per request, and their
// one marshalling to NVRTC arguments (canonical_flags() is normalized() then this). The request
// path takes NormalizedOptions, which only normalize() makes: the facade normalizes a request
// once (collecting its warnings) and passes that down, so no part below normalizes again, and none
// can be handed options that were not. Throws UsageError when `resolved` is native.
#pragma once

#include "core/base/tools_api.hpp"

#include <kjit/compile_options.hpp>

#include <string>
#include <utility>
#include <vector>

namespace kjit {
// The options with every understood raw flag folded into its typed field (arch included), nvcc's
// spellings translated to NVRTC's, NVRTC's own options kept in order: one spelling of each
// (kjit's own parts and tests; canonical_flags() normalizes first). nvcc's host-only flags are
// dropped; with `dropped`, one message each is added there (once per distinct flag) for the
// caller to log as a warning: only the facade (runtime.cpp) collects them, once per request.
// Throws UsageError for a flag neither NVRTC nor nvcc has (naming the closest option), a bad
// value, or flags asking for two archs.
KJIT_TOOLS_API CompileOptions normalized(const CompileOptions& options, std::vector<std::string>* dropped = nullptr);
}  // namespace kjit

namespace kjit::compile {

class NormalizedOptions;
// normalized(), as the type the request path takes.
NormalizedOptions normalize(const CompileOptions& options, std::vector<std::string>* dropped = nullptr);

class NormalizedOptions {
public:
  const CompileOptions& get() const noexcept { return m_options; }
  const CompileOptions* operator->() const noexcept { return &m_options; }
  // A link's part: the same options compiled as relocatable device code (-rdc=true), as LTO-IR
  // with `lto` (-dlto), spelled as normalize() spells them (the rest is normalized already).
  NormalizedOptions relocatable(bool lto) const;

private:
  friend NormalizedOptions normalize(const CompileOptions&, std::vector<std::string>*);
  explicit NormalizedOptions(CompileOptions options) : m_options(std::move(options)) {}
  CompileOptions m_options;
};

std::vector<std::string> marshal(const NormalizedOptions& options, const Arch& resolved);

}  // namespace kjit::compile
