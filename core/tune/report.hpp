// The tuner's text and environment for kjit's own parts: what KJIT_PRINT_TUNING (and `kjit tune`,
// through TuneAheadItem::report) prints, and KJIT_TUNE.
#pragma once

#include "core/base/tools_api.hpp"

#include <kjit/tune.hpp>

#include <string>
#include <string_view>

namespace kjit {

// A line naming the tuner, key, device and choice, then one line per candidate with its time
// and, for one not chosen to the end, why.
KJIT_TOOLS_API std::string format_decision(std::string_view name, std::string_view key, std::string_view device,
                            const TuneDecision& decision);
// KJIT_TUNE: unset, "on" or empty: on; "off"; "force". Throws UsageError for another value.
TuneMode tune_mode_from_environment();

}  // namespace kjit
