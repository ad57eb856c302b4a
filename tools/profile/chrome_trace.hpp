// kjit::profile::chrome_trace: a Recording as a Chrome trace (the JSON object format that
// Perfetto and chrome://tracing open). One process for the host (its threads as tracks: launch
// calls, kjit's phases, user ranges) and one per GPU (its streams as tracks: kernels, copies,
// sets); a flow arrow from each launch call to its kernel; arguments on each event. Times in
// microseconds from the session's start.
#pragma once

#include "tools/profile/recording.hpp"

#include <string>

namespace kjit::profile {

std::string chrome_trace(const Recording& recording);

}  // namespace kjit::profile
