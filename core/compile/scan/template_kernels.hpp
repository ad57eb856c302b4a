// kjit::compile::template_kernels: the qualified names of the template kernels a source declares
// ("kjit::gelu" for `template <class T> __global__ void gelu(...)` in `namespace kjit`), for the
// hints that say how to name one (NVRTC looks a name expression up from the global namespace),
// and name_expression_hint: what to say when NVRTC could not parse a name expression. A scan of
// the text, not a parse: comments, literals and preprocessor lines are skipped, namespaces
// followed by their braces. Never throws.
#pragma once

#include "core/base/tools_api.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace kjit::compile {

KJIT_TOOLS_API std::vector<std::string> template_kernels(std::string_view source);

// For a log where NVRTC could not parse a name expression: a note naming each expression of
// `expressions` written without the namespace of the template kernel it names, and how to write
// it ("kjit::gelu<float>"), or a general word on qualifying it; "" for any other log.
std::string name_expression_hint(std::string_view log, std::string_view source,
                                 const std::vector<std::string>& expressions);

}  // namespace kjit::compile
