// kjit::profile::cupti: libcupti, opened with dlopen on the first Profiler (never linked, so
// that kjit builds and runs without it). Tried in order: $KJIT_CUPTI_LIBRARY (a file), the
// soname, beside the libnvrtc this process loaded, the toolkit's lib64 and extras/CUPTI/lib64,
// then the CUPTI kjit was built with.
#pragma once

#include <cupti.h>

#include <string>

namespace kjit::profile {

struct CuptiApi {
  decltype(&cuptiSubscribe) subscribe = nullptr;
  decltype(&cuptiUnsubscribe) unsubscribe = nullptr;
  decltype(&cuptiEnableCallback) enable_callback = nullptr;
  decltype(&cuptiActivityEnable) activity_enable = nullptr;
  decltype(&cuptiActivityDisable) activity_disable = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) dropped_records = nullptr;
  decltype(&cuptiGetTimestamp) timestamp = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
  std::string library;  // the file that was opened

  // "CUPTI_ERROR_X (text)" for a result.
  std::string describe(CUptiResult result) const;
};

// The loaded CUPTI, or nullptr and why (never throws). Loaded once per process.
const CuptiApi* cupti(std::string* why);

}  // namespace kjit::profile
