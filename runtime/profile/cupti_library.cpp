#include "runtime/profile/cupti_library.hpp"

#include "runtime/base/dynamic_library.hpp"
#include "runtime/base/environment.hpp"
#include "runtime/base/toolkit_location.hpp"

#include <fmt/format.h>

#include <cuda.h>

#include <cstdlib>
#include <mutex>
#include <type_traits>
#include <vector>

namespace kjit::profile {
namespace {

struct Loaded {
  CuptiApi api;
  std::string error;
};

Loaded load() {
  Loaded out;
  const std::string soname = fmt::format("libcupti.so.{}", CUDA_VERSION / 1000);
  std::vector<std::string> tried;
  if (auto chosen = base::env_text(base::Env::cupti_library)) {
    tried.push_back(*chosen);  // the user's choice, and only it
  } else {
    tried = base::toolkit_library_candidates(soname, {"lib64", "extras/CUPTI/lib64"});
#ifdef KJIT_CUPTI_BUILD_LIBRARY
    tried.push_back(KJIT_CUPTI_BUILD_LIBRARY);
#endif
  }
  base::DynamicLibrary lib = base::DynamicLibrary::open_first(tried);
  if (!lib) {
    out.error = fmt::format("CUPTI (libcupti, the CUDA toolkit's profiling library) could not be loaded: {}; "
                            "install the toolkit's CUPTI, put it on LD_LIBRARY_PATH or name it in KJIT_CUPTI_LIBRARY",
                            lib.why());
    return out;
  }
  out.api.library = lib.file();
  auto resolve = [&](auto& fn, const char* name) { lib.resolve(fn, name); };
  CuptiApi& a = out.api;
  resolve(a.subscribe, "cuptiSubscribe");
  resolve(a.unsubscribe, "cuptiUnsubscribe");
  resolve(a.enable_callback, "cuptiEnableCallback");
  resolve(a.activity_enable, "cuptiActivityEnable");
  resolve(a.activity_disable, "cuptiActivityDisable");
  resolve(a.register_callbacks, "cuptiActivityRegisterCallbacks");
  resolve(a.flush_all, "cuptiActivityFlushAll");
  resolve(a.next_record, "cuptiActivityGetNextRecord");
  resolve(a.dropped_records, "cuptiActivityGetNumDroppedRecords");
  resolve(a.timestamp, "cuptiGetTimestamp");
  resolve(a.result_string, "cuptiGetResultString");
  if (!lib.missing().empty()) out.error = fmt::format("CUPTI {} lacks {}", a.library, lib.missing());
  return out;
}

}  // namespace

std::string CuptiApi::describe(CUptiResult result) const {
  const char* text = nullptr;
  if (result_string == nullptr || result_string(result, &text) != CUPTI_SUCCESS || text == nullptr) {
    return fmt::format("CUPTI error {}", static_cast<int>(result));
  }
  return text;
}

const CuptiApi* cupti(std::string* why) {
  // Kept once loaded; a failure is tried again next time (KJIT_CUPTI_LIBRARY may change).
  static std::mutex mutex;
  static const Loaded* loaded = nullptr;
  std::lock_guard lock(mutex);
  if (loaded == nullptr) {
    Loaded attempt = load();
    if (!attempt.error.empty()) {
      if (why != nullptr) *why = attempt.error;
      return nullptr;
    }
    loaded = new Loaded(std::move(attempt));  // never freed: CUPTI stays loaded
  }
  return &loaded->api;
}

}  // namespace kjit::profile
