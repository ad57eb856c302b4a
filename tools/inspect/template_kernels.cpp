// kjit::inspect::template_kernels: compile/'s scan of a source for its template kernels.
#include "core/spi/compile.hpp"

#include <kjit/tools/inspect.hpp>

namespace kjit::inspect {

std::vector<std::string> template_kernels(std::string_view source) { return compile::template_kernels(source); }

}  // namespace kjit::inspect
