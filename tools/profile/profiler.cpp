// kjit::Profiler: the public scope over the session (profile/collector), the summary
// (profile/summary) and the trace (profile/chrome_trace).
#include <kjit/device.hpp>
#include <kjit/error.hpp>
#include <kjit/tools/profile.hpp>

#include "core/spi/base.hpp"
#include "core/spi/system.hpp"
#include "core/spi/trace.hpp"
#include "tools/profile/chrome_trace.hpp"
#include "tools/profile/collector.hpp"
#include "tools/profile/summary.hpp"

#include <fmt/format.h>

#include <cstring>
#include <mutex>
#include <set>

namespace kjit {

struct Profiler::Impl {
  bool active = false;
  bool stopped = false;
  std::string message;
  profile::Recording recording;
};

namespace {

// Each reason once per process: a program that opens a Profiler per request is told once.
void say_once(const ProfileOptions& options, const std::string& message) {
  static std::mutex mutex;
  static std::set<std::string> said;
  {
    std::lock_guard lock(mutex);
    if (!said.insert(message).second) return;
  }
  const std::string text = fmt::format("profiler: {}; the program runs unprofiled", message);
  if (options.log) {
    options.log(LogLevel::warn, text);
  } else {
    base::default_log(LogLevel::warn, text);  // the library's default callback, as a Runtime's
  }
}

}  // namespace

Profiler::Profiler() : Profiler(ProfileOptions{}) {}

Profiler::Profiler(ProfileOptions options) : m_impl(std::make_unique<Impl>()) {
  if (!options.metrics.empty() && options.check_metrics_at_start && driver_available()) {
    try {
      (void)plan_metrics(options.metrics);  // an unknown name is the caller's to fix: UsageError
    } catch (const UnavailableError&) {
      // No GPU, or a CUPTI without the host API: the session says why (or records no counters).
    }
  }
  if (auto why = profile::start_session(options)) {
    m_impl->message = *why;
    say_once(options, *why);
    return;
  }
  m_impl->active = true;
}

Profiler::~Profiler() {
  try {
    stop();
  } catch (...) {
  }
}

bool Profiler::active() const { return m_impl->active; }
const std::string& Profiler::message() const { return m_impl->message; }

void Profiler::stop() {
  if (!m_impl->active || m_impl->stopped) return;
  m_impl->stopped = true;
  m_impl->recording = profile::stop_session();
}

ProfileSummary Profiler::summary(const TableOptions& options) {
  stop();
  if (!m_impl->active) {
    ProfileSummary s;
    s.message = m_impl->message;
    return s;
  }
  return profile::summarize(m_impl->recording, options);
}

std::string Profiler::table(const TableOptions& options) { return format_table(summary(options), options); }

std::string Profiler::chrome_trace() {
  stop();
  return profile::chrome_trace(m_impl->recording);
}

void Profiler::export_chrome_trace(const std::filesystem::path& path) {
  const std::string text = chrome_trace();
  if (auto written = system::write_file_atomically(path, text); !written) {
    throw IoError(fmt::format("writing the profiler's Chrome trace: {}", written.error().message));
  }
}

Profiler::Range::Range(std::string_view name) {
  if (profile::recording()) {
    m_name = name;
    m_start = profile::now();
  }
  if (trace::nvtx::enabled()) {
    const std::string text(name);
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = text.c_str();
    nvtxDomainRangePushEx(trace::nvtx::domain(), &a);
    m_nvtx = true;
  }
}

Profiler::Range::~Range() {
  if (m_nvtx) nvtxDomainRangePop(trace::nvtx::domain());
  if (m_start == 0) return;
  profile::HostRange r;
  r.start = m_start;
  r.end = profile::now();
  if (r.end == 0) return;
  r.thread = profile::thread_id();
  r.phase = profile::Phase::user;
  r.name = std::move(m_name);
  trace::record_range(std::move(r));
}

}  // namespace kjit
