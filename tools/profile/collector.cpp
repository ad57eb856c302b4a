#include "tools/profile/collector.hpp"

#include "tools/profile/cupti_library.hpp"
#include "tools/profile/metric_session.hpp"

#include <kjit/error.hpp>

#include <fmt/format.h>

#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace kjit::profile {

namespace {

constexpr std::size_t k_buffer_bytes = 4u << 20;

// The launch calls CUPTI tells kjit about (and nothing else: every other API call runs without
// a callback).
struct LaunchApi {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  const char* name;
};
constexpr LaunchApi k_launch_apis[] = {
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel"},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, "cuLaunchKernel_ptsz"},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, "cuLaunchKernelEx"},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, "cuLaunchKernelEx_ptsz"},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel"},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
     "cuLaunchCooperativeKernel_ptsz"},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid, "cuLaunchGrid"},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, "cuGraphLaunch"},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, "cuGraphLaunch_ptsz"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000, "cudaLaunchKernel_ptsz"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, "cudaLaunchKernelExC"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
     "cudaLaunchKernelExC_ptsz"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, "__cudaLaunchKernel"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000, "__cudaLaunchKernel_ptsz"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
     "cudaLaunchCooperativeKernel"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
     "cudaLaunchCooperativeKernel_ptsz"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, "cudaGraphLaunch"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000, "cudaGraphLaunch_ptsz"},
};
constexpr std::size_t k_launch_api_count = sizeof(k_launch_apis) / sizeof(k_launch_apis[0]);

// A bounded list in arrival order: past `bound` the oldest entry is overwritten and counted.
template <class T>
struct Ring {
  std::vector<T> items;
  std::size_t next = 0;  // the oldest, once full
  std::uint64_t dropped = 0;

  void push(const T& item, std::size_t bound) {
    if (items.size() < bound) {
      items.push_back(item);
      return;
    }
    if (bound == 0) {
      ++dropped;
      return;
    }
    items[next] = item;
    next = (next + 1) % bound;
    ++dropped;
  }
  std::vector<T> take() {
    std::rotate(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(next), items.end());
    std::vector<T> out = std::move(items);
    *this = Ring{};
    return out;
  }
};

// One per thread that launched while a session recorded; written only by its thread, read by
// stop_session() once the callbacks are off. Never freed (a thread's end leaves it for reuse
// by the next session's reader: it is skipped by its session number).
struct ThreadLaunches {
  std::uint64_t session = 0;
  std::uint32_t thread = 0;
  std::uint64_t pending_start = 0;
  int depth = 0;  // launch calls in flight on this thread (a runtime launch calls the driver's inside)
  Ring<LaunchCall> calls;
};

struct Session {
  std::mutex mutex;  // everything below but `threads`' contents
  const CuptiApi* cupti = nullptr;
  CUpti_SubscriberHandle subscriber = nullptr;
  std::uint64_t number = 0;  // the session's number (1, 2, ...): thread buffers of older ones are stale
  std::size_t bound = 0;
  bool memory = true;
  Recording rec;
  Ring<KernelEvent> kernels;
  Ring<TransferEvent> transfers;
  std::vector<HostRange> ranges;
  std::uint64_t ranges_dropped = 0;
  std::uint64_t cupti_dropped = 0;
  std::unordered_map<const char*, std::uint32_t> name_by_pointer;  // CUPTI's shared name strings
  std::unordered_map<std::string, std::uint32_t> name_by_text;
  std::uint32_t api_names[k_launch_api_count] = {};
  std::vector<ThreadLaunches*> threads;  // every thread buffer ever made; under `threads_mutex`
  std::mutex threads_mutex;
  // Hardware counters, when asked: set before the subscription, taken after it ends.
  std::unique_ptr<MetricSession> metrics;
};

Session& session() {
  static Session* s = new Session();  // never destroyed: CUPTI may call in at exit
  return *s;
}

std::atomic<std::uint64_t> g_session_number{0};
std::atomic<bool> g_open{false};  // a session exists (only one at a time)

std::uint32_t intern(Session& s, const std::string& text) {
  auto [it, inserted] = s.name_by_text.emplace(text, static_cast<std::uint32_t>(s.rec.names.size()));
  if (inserted) s.rec.names.push_back(text);
  return it->second;
}

std::uint32_t intern(Session& s, const char* shared) {
  if (shared == nullptr) return intern(s, std::string("(unnamed)"));
  if (auto it = s.name_by_pointer.find(shared); it != s.name_by_pointer.end()) return it->second;
  const std::uint32_t id = intern(s, std::string(shared));
  s.name_by_pointer.emplace(shared, id);
  return id;
}

ThreadLaunches& thread_launches() {
  thread_local ThreadLaunches* mine = nullptr;
  Session& s = session();
  const std::uint64_t number = g_session_number.load(std::memory_order_relaxed);
  if (mine == nullptr) {
    mine = new ThreadLaunches();
    mine->thread = thread_id();
    std::lock_guard lock(s.threads_mutex);
    s.threads.push_back(mine);
  }
  if (mine->session != number) {
    mine->session = number;
    mine->depth = 0;
    mine->calls = Ring<LaunchCall>{};
    mine->calls.items.reserve(4096);
  }
  return *mine;
}

void CUPTIAPI on_launch_call(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  Session& s = session();
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {  // only with metrics: a context about to go
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING && s.metrics) {
      s.metrics->context_destroyed(static_cast<const CUpti_ResourceData*>(data)->context);
    }
    return;
  }
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  ThreadLaunches& t = thread_launches();
  std::uint64_t stamp = 0;
  if (cb->callbackSite == CUPTI_API_ENTER) {
    if (++t.depth == 1 && s.metrics) s.metrics->enter(*cb);  // the outermost call: measured or not
    s.cupti->timestamp(&stamp);
    t.pending_start = stamp;
    return;
  }
  s.cupti->timestamp(&stamp);
  if (t.depth > 0 && --t.depth == 0 && s.metrics) s.metrics->exit(*cb);
  std::uint32_t api = 0;
  for (std::size_t i = 0; i < k_launch_api_count; ++i) {
    if (k_launch_apis[i].cbid == cbid && k_launch_apis[i].domain == domain) {
      api = s.api_names[i];
      break;
    }
  }
  t.calls.push(LaunchCall{t.pending_start, stamp, cb->correlationId, t.thread, api}, s.bound);
}

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, k_buffer_bytes));
  *size = *buffer != nullptr ? k_buffer_bytes : 0;
  *max_records = 0;
}

TransferKind copy_kind(std::uint8_t kind) {
  switch (kind) {
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return TransferKind::htod;
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return TransferKind::dtoh;
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return TransferKind::dtod;
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return TransferKind::htoh;
  case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return TransferKind::ptop;
  default: return TransferKind::other_copy;
  }
}

void CUPTIAPI on_buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  Session& s = session();
  {
    std::lock_guard lock(s.mutex);
    CUpti_Activity* record = nullptr;
    while (s.cupti != nullptr && s.cupti->next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
      switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        KernelEvent e;
        e.start = k->start;
        e.end = k->end;
        e.name = intern(s, k->name);
        e.device = k->deviceId;
        e.context = k->contextId;
        e.stream = k->streamId;
        e.correlation = k->correlationId;
        e.grid[0] = k->gridX, e.grid[1] = k->gridY, e.grid[2] = k->gridZ;
        e.block[0] = k->blockX, e.block[1] = k->blockY, e.block[2] = k->blockZ;
        e.registers = k->registersPerThread;
        e.static_shared = k->staticSharedMemory;
        e.dynamic_shared = k->dynamicSharedMemory;
        s.kernels.push(e, s.bound);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        s.transfers.push(TransferEvent{m->start, m->end, m->bytes, m->deviceId, m->contextId, m->streamId,
                                       m->correlationId, static_cast<std::uint8_t>(copy_kind(m->copyKind))},
                         s.bound);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        s.transfers.push(TransferEvent{m->start, m->end, m->bytes, m->deviceId, m->contextId, m->streamId,
                                       m->correlationId, static_cast<std::uint8_t>(TransferKind::memset)},
                         s.bound);
        break;
      }
      default: break;
      }
    }
    std::size_t dropped = 0;
    if (s.cupti != nullptr && s.cupti->dropped_records(context, stream, &dropped) == CUPTI_SUCCESS) {
      s.cupti_dropped += dropped;
    }
  }
  std::free(buffer);
}

// Whether there is a CUDA driver to profile: libcuda opens (a driver without a GPU is CUPTI's to
// report). Nothing of the driver is called: inside CUDA's injection (cuInit calls kjit_inject) a
// driver call would re-enter cuInit, and profile/ sits below driver/ (driver/ marks its loads).
std::optional<std::string> driver_problem() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* e = dlerror();
    return fmt::format("no CUDA driver: libcuda.so.1 cannot be opened ({})", e ? e : "unknown reason");
  }
  dlclose(lib);
  return std::nullopt;
}

}  // namespace

namespace {

// The session as trace/'s recorder: CUPTI's clock, and ranges kept up to the session's bound.
std::uint64_t cupti_now() noexcept {
  const CuptiApi* api = session().cupti;
  std::uint64_t stamp = 0;
  if (api != nullptr) api->timestamp(&stamp);
  return stamp;
}

void keep_range(trace::HostRange&& range) noexcept {
  if (!recording()) return;
  Session& s = session();
  try {
    std::lock_guard lock(s.mutex);
    if (s.ranges.size() >= s.bound) {
      ++s.ranges_dropped;  // user ranges beyond the bound: the newest are the ones dropped
      return;
    }
    s.ranges.push_back(std::move(range));
  } catch (...) {
  }
}

constexpr trace::Recorder k_recorder{&cupti_now, &keep_range};

}  // namespace

std::optional<std::string> start_session(const ProfileOptions& options) {
  bool expected = false;
  if (!g_open.compare_exchange_strong(expected, true)) {
    return std::string("another kjit::Profiler is recording in this process (one at a time)");
  }
  auto fail = [](std::string why) {
    g_open.store(false);
    return std::optional<std::string>(std::move(why));
  };
  std::string why;
  const CuptiApi* api = cupti(&why);
  if (api == nullptr) return fail(why);
  if (auto problem = driver_problem()) return fail(*problem);

  Session& s = session();
  s.metrics.reset();
  if (!options.metrics.empty()) {
    try {
      s.metrics = std::make_unique<MetricSession>(*api, expand_metrics(options.metrics), options.metric_filter);
    } catch (...) {  // a name or regex the caller must fix
      g_open.store(false);
      throw;
    }
  }
  {
    std::lock_guard lock(s.mutex);
    s.cupti = api;
    s.bound = options.max_events;
    s.memory = options.memory;
    s.rec = Recording{};
    s.kernels = {};
    s.transfers = {};
    s.ranges.clear();
    s.ranges_dropped = 0;
    s.cupti_dropped = 0;
    s.name_by_pointer.clear();
    s.name_by_text.clear();
    for (std::size_t i = 0; i < k_launch_api_count; ++i) s.api_names[i] = intern(s, std::string(k_launch_apis[i].name));
    s.rec.pid = static_cast<int>(::getpid());
  }
  g_session_number.fetch_add(1);

  CUptiResult r = api->subscribe(&s.subscriber, on_launch_call, nullptr);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    return fail("another profiler (Nsight Systems, Nsight Compute or another CUPTI client) is attached to this "
                "process, and CUPTI allows one");
  }
  if (r != CUPTI_SUCCESS) return fail(fmt::format("cuptiSubscribe failed: {}", api->describe(r)));
  auto undo = [&](const char* call, CUptiResult result) {
    api->unsubscribe(s.subscriber);
    s.subscriber = nullptr;
    s.metrics.reset();
    return fail(fmt::format("{} failed: {}", call, api->describe(result)));
  };
  for (const auto& launch : k_launch_apis) {
    if ((r = api->enable_callback(1, s.subscriber, launch.domain, launch.cbid)) != CUPTI_SUCCESS) {
      return undo("cuptiEnableCallback", r);
    }
  }
  if (s.metrics) {
    if ((r = api->enable_callback(1, s.subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                  CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING)) != CUPTI_SUCCESS) {
      return undo("cuptiEnableCallback(CONTEXT_DESTROY_STARTING)", r);
    }
  }
  if ((r = api->register_callbacks(on_buffer_requested, on_buffer_completed)) != CUPTI_SUCCESS) {
    return undo("cuptiActivityRegisterCallbacks", r);
  }
  if ((r = api->activity_enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) != CUPTI_SUCCESS) {
    return undo("cuptiActivityEnable(CONCURRENT_KERNEL)", r);
  }
  if (options.memory) {
    api->activity_enable(CUPTI_ACTIVITY_KIND_MEMCPY);
    api->activity_enable(CUPTI_ACTIVITY_KIND_MEMSET);
  }
  std::uint64_t start = 0;
  api->timestamp(&start);
  {
    std::lock_guard lock(s.mutex);
    s.rec.start = start;
  }
  trace::attach(&k_recorder);
  return std::nullopt;
}

Recording stop_session() {
  Session& s = session();
  const CuptiApi* api = s.cupti;
  trace::attach(nullptr);
  std::uint64_t stop = 0;
  api->timestamp(&stop);
  // Callbacks off first, so that no thread writes its launch buffer while it is read below.
  for (const auto& launch : k_launch_apis) api->enable_callback(0, s.subscriber, launch.domain, launch.cbid);
  if (s.metrics) {
    api->enable_callback(0, s.subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  }
  MetricRecording metrics = s.metrics ? s.metrics->finish() : MetricRecording{};
  api->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  api->activity_disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (s.memory) {
    api->activity_disable(CUPTI_ACTIVITY_KIND_MEMCPY);
    api->activity_disable(CUPTI_ACTIVITY_KIND_MEMSET);
  }
  api->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  api->unsubscribe(s.subscriber);
  s.subscriber = nullptr;
  s.metrics.reset();

  Recording out;
  {
    std::lock_guard lock(s.mutex);
    out = std::move(s.rec);
    out.stop = stop;
    out.dropped = s.kernels.dropped + s.transfers.dropped + s.ranges_dropped + s.cupti_dropped;
    out.kernels = s.kernels.take();
    out.transfers = s.transfers.take();
    out.ranges = std::move(s.ranges);
    s.ranges.clear();
    s.rec = Recording{};
  }
  {
    const std::uint64_t number = g_session_number.load();
    std::lock_guard lock(s.threads_mutex);
    for (ThreadLaunches* t : s.threads) {
      if (t->session != number) continue;
      out.dropped += t->calls.dropped;
      auto calls = t->calls.take();
      out.launches.insert(out.launches.end(), calls.begin(), calls.end());
    }
  }
  std::sort(out.launches.begin(), out.launches.end(),
            [](const LaunchCall& a, const LaunchCall& b) { return a.start < b.start; });
  out.known = trace::known_kernels();
  out.metrics = std::move(metrics);
  apply_measured_durations(out);
  g_open.store(false);
  return out;
}

}  // namespace kjit::profile
