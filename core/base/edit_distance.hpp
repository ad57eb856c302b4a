// kjit::base::edit_distance: the Levenshtein distance of two names, for "did you mean" answers
// (an unknown compile flag's closest NVRTC option, an unknown metric's closest names). Never throws.
#pragma once

#include "core/base/tools_api.hpp"

#include <cstddef>
#include <string_view>

namespace kjit::base {

KJIT_TOOLS_API std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace kjit::base
