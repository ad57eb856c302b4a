#include "core/trace/phase.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>
#include <unordered_map>

namespace kjit::trace {

namespace detail {
std::atomic<const Recorder*> g_recorder{nullptr};
}

namespace {

struct Known {
  std::mutex mutex;
  std::unordered_map<std::string, KnownKernel> kernels;  // by mangled name
};
Known& known() {
  static auto& k = *new Known();  // never destroyed: loads may happen during exit
  return k;
}

}  // namespace

const char* to_string(Phase phase) {
  switch (phase) {
  case Phase::request_hash: return "request hash";
  case Phase::registry_hit: return "registry hit";
  case Phase::disk_hit: return "disk hit";
  case Phase::remote_hit: return "remote hit";
  case Phase::compile: return "compile";
  case Phase::nvrtc: return "nvrtc";
  case Phase::link: return "link";
  case Phase::load: return "load";
  case Phase::wait: return "wait";
  case Phase::user: return "user";
  }
  return "?";
}

void attach(const Recorder* recorder) noexcept { detail::g_recorder.store(recorder); }

std::uint64_t now() noexcept {
  const Recorder* r = detail::g_recorder.load(std::memory_order_acquire);
  return r != nullptr ? r->now() : 0;
}

std::uint32_t thread_id() noexcept {
  thread_local const auto id = static_cast<std::uint32_t>(::syscall(SYS_gettid));
  return id;
}

void record_range(HostRange range) noexcept {
  if (const Recorder* r = detail::g_recorder.load(std::memory_order_acquire)) r->record(std::move(range));
}

void remember_kernel(std::string_view mangled, std::string_view expression, std::string_view program,
                     std::string_view key, std::string_view outcome) {
  Known& k = known();
  std::lock_guard lock(k.mutex);
  auto& e = k.kernels[std::string(mangled)];
  e.mangled = mangled;
  e.expression = expression;
  e.program = program;
  e.key = key;
  e.outcome = outcome;
}

std::vector<KnownKernel> known_kernels() {
  Known& k = known();
  std::lock_guard lock(k.mutex);
  std::vector<KnownKernel> out;
  out.reserve(k.kernels.size());
  for (const auto& [_, e] : k.kernels) out.push_back(e);
  return out;
}

void PhaseScope::end(Phase phase, std::string_view program, std::string_view key, std::string_view outcome) noexcept {
  if (m_start == 0) return;
  try {
    HostRange r;
    r.start = m_start;
    r.end = now();
    if (r.end == 0) return;  // the recorder detached meanwhile
    r.thread = thread_id();
    r.phase = phase;
    r.name = program;
    r.key = key;
    r.outcome = outcome;
    record_range(std::move(r));
  } catch (...) {
  }
}

}  // namespace kjit::trace
