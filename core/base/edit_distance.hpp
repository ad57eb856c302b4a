// kjit::base::edit_distance: how far apart two names are, for "did you mean" answers (the CLI's
// commands and options, an unknown compile flag's closest NVRTC option, an unknown metric's
// closest names): the optimal string alignment distance, Levenshtein's insertions, deletions and
// substitutions plus the swap of two neighbours, each one edit ("cahce" is one from "cache",
// "wram" one from "warm"). Never throws.
#pragma once

#include "core/base/tools_api.hpp"

#include <cstddef>
#include <string_view>

namespace kjit::base {

KJIT_TOOLS_API std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace kjit::base
