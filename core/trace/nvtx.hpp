// NVTX ranges in kjit's own domain ("kjit"), so Nsight Systems and Nsight Compute show kjit's
// phases (compile, load) and each launch by kernel name. NVTX3 is header-only. Profilers attach
// by setting NVTX_INJECTION64_PATH; without it kjit makes no NVTX call at all (NVTX's own
// first-call initialization costs tens of microseconds on a process's first request), and a
// launch pays one predictable branch.
#pragma once

#include <nvtx3/nvToolsExt.h>

#include <cstdlib>
#include <string>
#include <string_view>

namespace kjit::trace::nvtx {

inline bool enabled() {
  static const bool on = std::getenv("NVTX_INJECTION64_PATH") != nullptr;
  return on;
}

inline nvtxDomainHandle_t domain() {
  static const nvtxDomainHandle_t d = nvtxDomainCreateA("kjit");
  return d;
}

// A registered string (cheap to use on every launch); nullptr without a profiler.
inline nvtxStringHandle_t register_string(const std::string& text) {
  return enabled() ? nvtxDomainRegisterStringA(domain(), text.c_str()) : nullptr;
}

// A range open for the life of the object; nothing without a profiler.
class Range {
public:
  // "<what> <name>", built only when a profiler is attached.
  Range(std::string_view what, std::string_view name) {
    if (!enabled()) return;
    std::string message;
    message.append(what).append(" ").append(name);
    nvtxEventAttributes_t a = attributes();
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = message.c_str();
    push(a);
  }
  explicit Range(nvtxStringHandle_t registered) {
    if (registered == nullptr) [[likely]] return;
    nvtxEventAttributes_t a = attributes();
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = registered;
    push(a);
  }
  ~Range() {
    if (m_pushed) nvtxDomainRangePop(domain());
  }
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;

private:
  void push(const nvtxEventAttributes_t& a) {
    nvtxDomainRangePushEx(domain(), &a);
    m_pushed = true;
  }
  static nvtxEventAttributes_t attributes() {
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    return a;
  }
  bool m_pushed = false;
};

}  // namespace kjit::trace::nvtx
