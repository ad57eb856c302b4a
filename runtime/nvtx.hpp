// NVTX ranges in kjit's own domain ("kjit"), so Nsight Systems and Nsight Compute show kjit's
// phases (compile, load) and each launch by kernel name. NVTX3 is header-only: without a
// profiler attached every call is a no-op through a function pointer (no allocation, no lock).
#pragma once

#include <nvtx3/nvToolsExt.h>

#include <string>

namespace kjit::runtime::nvtx {

inline nvtxDomainHandle_t domain() {
  static const nvtxDomainHandle_t d = nvtxDomainCreateA("kjit");
  return d;
}

// A registered string (cheap to use on every launch); nullptr without a profiler.
inline nvtxStringHandle_t register_string(const std::string& text) {
  return nvtxDomainRegisterStringA(domain(), text.c_str());
}

// A range open for the life of the object.
class Range {
public:
  explicit Range(const std::string& message) {
    nvtxEventAttributes_t a = attributes();
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = message.c_str();
    nvtxDomainRangePushEx(domain(), &a);
  }
  explicit Range(nvtxStringHandle_t registered) {
    nvtxEventAttributes_t a = attributes();
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = registered;
    nvtxDomainRangePushEx(domain(), &a);
  }
  ~Range() { nvtxDomainRangePop(domain()); }
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;

private:
  static nvtxEventAttributes_t attributes() {
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    return a;
  }
};

}  // namespace kjit::runtime::nvtx
