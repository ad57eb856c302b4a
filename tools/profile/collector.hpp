// kjit::profile's live session: the one place CUPTI is driven from. While a Profiler records,
// CUPTI's activity buffers bring every kernel, memcpy and memset (parsed into a bounded
// Recording: past the bound the oldest are dropped and counted), and CUPTI's callbacks on the
// launch calls alone (driver and runtime API) note each launch call's host time in the calling
// thread's own buffer: no lock on the way. kjit's request path notes its phases through
// trace::PhaseScope; a session attaches itself as trace/'s recorder. Launches through kjit pay
// nothing when no session is open: CUPTI is not subscribed then.
#pragma once

#include <kjit/tools/profile.hpp>

#include "tools/profile/recording.hpp"
#include "core/spi/trace.hpp"

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kjit::profile {

using trace::now;
using trace::recording;
using trace::thread_id;

// Starts the one session of the process. nullopt when it started; else why it cannot record.
std::optional<std::string> start_session(const ProfileOptions& options);
// Ends it (flushing CUPTI's buffers) and hands over what it recorded.
Recording stop_session();

}  // namespace kjit::profile
