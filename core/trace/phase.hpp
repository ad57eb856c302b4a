// kjit::trace: kjit's own phases on the request path (request hash, lookups, NVRTC, link, load)
// as host ranges, and the kernels it loaded, for whoever records them. A profiling session
// (profile/collector) attaches a Recorder for its length; with none attached a phase mark costs
// one relaxed atomic load. driver/ and request/ mark their phases here and know nothing of CUPTI.
#pragma once

#include "core/base/tools_api.hpp"

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::trace {

enum class Phase : std::uint8_t {
  request_hash, registry_hit, disk_hit, remote_hit, compile, nvrtc, link, load, wait, user
};
KJIT_TOOLS_API const char* to_string(Phase phase);

// A host range: one of kjit's phases or a user range.
struct HostRange {
  std::uint64_t start = 0, end = 0;
  std::uint32_t thread = 0;
  Phase phase = Phase::user;
  std::string name;     // the user's range name, or the program's name for a phase
  std::string key;      // the cache key, when the phase has one
  std::string outcome;  // compiled, hit, remote_hit, waited; empty otherwise
};

// What kjit knows of a kernel it loaded: the name expression and program of a mangled name.
struct KnownKernel {
  std::string mangled, expression, program, key;
  std::string outcome;  // how its module's result came: compiled, hit, remote_hit, waited
};

// Who records the ranges: its clock (nanoseconds) and where a finished range goes. It must live
// as long as the process (a mark may still hold it just after detach).
struct Recorder {
  std::uint64_t (*now)() noexcept = nullptr;
  void (*record)(HostRange&& range) noexcept = nullptr;
};

namespace detail {
extern KJIT_TOOLS_API std::atomic<const Recorder*> g_recorder;
}

inline bool recording() noexcept { return detail::g_recorder.load(std::memory_order_relaxed) != nullptr; }
// Attaches `recorder` (nullptr: detaches).
KJIT_TOOLS_API void attach(const Recorder* recorder) noexcept;
// The recorder's clock while one is attached; 0 otherwise.
KJIT_TOOLS_API std::uint64_t now() noexcept;
// The calling thread's OS id.
KJIT_TOOLS_API std::uint32_t thread_id() noexcept;
// Hands a range to the recorder; dropped when none is attached.
KJIT_TOOLS_API void record_range(HostRange range) noexcept;

// Kept for the process's life (kernels are often loaded before a Profiler opens); once per kernel.
void remember_kernel(std::string_view mangled, std::string_view expression, std::string_view program,
                     std::string_view key, std::string_view outcome);
KJIT_TOOLS_API std::vector<KnownKernel> known_kernels();

// A phase of kjit's own: started at construction when something records, recorded by end().
class PhaseScope {
public:
  PhaseScope() noexcept : m_start(recording() ? now() : 0) {}
  void end(Phase phase, std::string_view program, std::string_view key = {}, std::string_view outcome = {}) noexcept;

private:
  std::uint64_t m_start;
};

}  // namespace kjit::trace
