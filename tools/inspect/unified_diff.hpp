// A unified diff of two line sequences, computed with dtl (shortest edit script) and grouped
// into hunks with `context` lines around each change. Internal to runtime/inspect; no throws
// besides std::bad_alloc.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kjit::inspect {

// "" when the sequences are equal; else "--- a_name\n+++ b_name\n@@ -1,3 +1,4 @@\n ...".
std::string unified_diff(const std::vector<std::string>& a, const std::vector<std::string>& b,
                         std::string_view a_name, std::string_view b_name, int context = 3);

}  // namespace kjit::inspect
