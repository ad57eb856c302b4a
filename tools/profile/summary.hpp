// kjit::profile::summarize: a Recording grouped into the profiler's table rows (kernels by name,
// optionally by launch shape; transfers by kind; kjit's phases and user ranges), sorted and
// limited as TableOptions asks. format_table (public) prints one.
#pragma once

#include <kjit/tools/profile.hpp>

#include "tools/profile/recording.hpp"

namespace kjit::profile {

// Throws UsageError for an unknown sort_by.
ProfileSummary summarize(const Recording& recording, const TableOptions& options);

}  // namespace kjit::profile
