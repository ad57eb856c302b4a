// kjit::closest_names: the names a misspelled one most likely meant, for "did you mean" answers
// (the CLI's commands and options; kjit's own NVRTC flags and metric names use the same edit
// distance). Never throws.
#pragma once

#include <kjit/export.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace kjit {

// The candidates nearest `word` by edit distance (Levenshtein), all of the smallest distance, in
// their order, when that distance is small for the word's length (1 up to 5 characters, then a
// third of the length), else those `word` is a prefix of (at least 3 characters). Empty when none
// is close, and when `word` is itself a candidate.
KJIT_API std::vector<std::string> closest_names(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace kjit
