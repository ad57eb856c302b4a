// kjit::profile's live session: the one place CUPTI is driven from. While a Profiler records,
// CUPTI's activity buffers bring every kernel, memcpy and memset (parsed into a bounded
// Recording: past the bound the oldest are dropped and counted), and CUPTI's callbacks on the
// launch calls alone (driver and runtime API) note each launch call's host time in the calling
// thread's own buffer: no lock on the way. kjit's request path notes its phases through
// PhaseScope; with nothing recording that costs one relaxed load. Launches through kjit pay
// nothing when no session is open: CUPTI is not subscribed then.
#pragma once

#include <kjit/profile.hpp>

#include "runtime/profile/recording.hpp"

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kjit::profile {

namespace detail {
extern std::atomic<bool> g_recording;
}

inline bool recording() noexcept { return detail::g_recording.load(std::memory_order_relaxed); }
// CUPTI's clock (ns) while recording; 0 otherwise.
std::uint64_t now() noexcept;
// The calling thread's OS id.
std::uint32_t thread_id() noexcept;

// Starts the one session of the process. nullopt when it started; else why it cannot record.
std::optional<std::string> start_session(const ProfileOptions& options);
// Ends it (flushing CUPTI's buffers) and hands over what it recorded.
Recording stop_session();

// A host range the session keeps (phases, user ranges); dropped when none records.
void record_range(HostRange range) noexcept;

// What kjit knows of a kernel it loaded, for the table's names and the trace's arguments. Kept
// for the process's life (kernels are often loaded before a Profiler opens); once per kernel.
void remember_kernel(std::string_view mangled, std::string_view expression, std::string_view program,
                     std::string_view key, std::string_view outcome);

// A phase of kjit's own: started at construction when a session records, recorded by end().
class PhaseScope {
public:
  PhaseScope() noexcept : m_start(recording() ? now() : 0) {}
  void end(Phase phase, std::string_view program, std::string_view key = {}, std::string_view outcome = {}) noexcept;

private:
  std::uint64_t m_start;
};

}  // namespace kjit::profile
