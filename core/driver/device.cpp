// kjit::Device, Stream, Event and the DeviceBuffer helpers over the run-time loaded driver.
#include <kjit/device.hpp>
#include <kjit/event.hpp>
#include <kjit/memory.hpp>
#include <kjit/stream.hpp>
#include <kjit/error.hpp>

#include "core/driver/driver_api.hpp"

#include <fmt/format.h>

#include <array>
#include <atomic>
#include <mutex>
#include <utility>

namespace kjit {
namespace {

using driver::check;

constexpr int k_max_devices = 64;
std::array<std::atomic<CUcontext>, k_max_devices> g_contexts{};
std::mutex g_context_mutex;
std::array<std::atomic<int>, k_max_devices> g_compute_capability{};  // 0 until read

}  // namespace

namespace driver {

CUcontext primary_context(int ordinal) {
  if (ordinal < 0 || ordinal >= k_max_devices) {
    throw UsageError(fmt::format("selecting CUDA device {}: kjit supports ordinals 0..{}", ordinal, k_max_devices - 1));
  }
  CUcontext ctx = g_contexts[ordinal].load(std::memory_order_acquire);
  if (ctx) return ctx;
  std::lock_guard lock(g_context_mutex);
  ctx = g_contexts[ordinal].load(std::memory_order_relaxed);
  if (ctx) return ctx;
  const auto& api = driver::get();
  CUdevice dev{};
  check(api.cuDeviceGet(&dev, ordinal), "cuDeviceGet", "selecting CUDA device {}", ordinal);
  check(api.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain",
        "creating the primary context of CUDA device {}", ordinal);
  g_contexts[ordinal].store(ctx, std::memory_order_release);
  return ctx;  // retained for the life of the process
}

}  // namespace driver

namespace {

using driver::primary_context;

int attribute(int ordinal, CUdevice_attribute attr, const char* what) {
  const auto& api = driver::get();
  CUdevice dev{};
  check(api.cuDeviceGet(&dev, ordinal), "cuDeviceGet", "selecting CUDA device {}", ordinal);
  int value = 0;
  check(api.cuDeviceGetAttribute(&value, attr, dev), "cuDeviceGetAttribute",
        "reading {} of CUDA device {}", what, ordinal);
  return value;
}

// Makes the device current when it is not already (a thread-local read in the driver) and leaves
// it current: Device::make_current, which the caller asked for.
void ensure_current(const Device& device) {
  driver::make_current(primary_context(device.ordinal()), driver::get());
}

// The device's primary context current for one kjit call, the caller's restored after it.
struct OnDevice : driver::ContextGuard {
  explicit OnDevice(const Device& device) : driver::ContextGuard(primary_context(device.ordinal()), driver::get()) {}
};

}  // namespace

bool driver_available() { return driver::try_driver() != nullptr; }

std::string driver_unavailable_reason() {
  std::string reason;
  driver::try_driver(&reason);
  return reason;
}

int device_count() {
  const auto* api = driver::try_driver();
  if (!api) return 0;
  int n = 0;
  if (api->cuDeviceGetCount(&n) != CUDA_SUCCESS) return 0;
  return n;
}

Device Device::current() {
  // One driver call: cuCtxGetDevice fails when no context is current.
  CUdevice dev{};
  if (driver::get().cuCtxGetDevice(&dev) == CUDA_SUCCESS) return Device(static_cast<int>(dev));
  return get(0);
}

Device Device::get(int ordinal) {
  int n = device_count();
  if (n == 0) driver::get();  // throws the no-driver error when that is the reason
  if (ordinal < 0 || ordinal >= n) {
    throw UsageError(fmt::format("selecting CUDA device {}: there {} {} device{}", ordinal,
                                 n == 1 ? "is" : "are", n, n == 1 ? "" : "s"));
  }
  return Device(ordinal);
}

std::string Device::name() const {
  const auto& api = driver::get();
  CUdevice dev{};
  check(api.cuDeviceGet(&dev, m_ordinal), "cuDeviceGet", "selecting CUDA device {}", m_ordinal);
  char buf[256] = {};
  check(api.cuDeviceGetName(buf, sizeof buf, dev), "cuDeviceGetName",
        "reading the name of CUDA device {}", m_ordinal);
  return buf;
}

int Device::compute_capability() const {
  // A device's compute capability never changes: read once per ordinal (a request asks a few times).
  const bool cacheable = m_ordinal >= 0 && m_ordinal < k_max_devices;
  if (cacheable) {
    if (int cc = g_compute_capability[m_ordinal].load(std::memory_order_relaxed)) return cc;
  }
  int cc = attribute(m_ordinal, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "the compute capability") * 10 +
           attribute(m_ordinal, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "the compute capability");
  if (cacheable) g_compute_capability[m_ordinal].store(cc, std::memory_order_relaxed);
  return cc;
}

std::uint64_t Device::total_memory() const {
  const auto& api = driver::get();
  CUdevice dev{};
  check(api.cuDeviceGet(&dev, m_ordinal), "cuDeviceGet", "selecting CUDA device {}", m_ordinal);
  size_t bytes = 0;
  check(api.cuDeviceTotalMem(&bytes, dev), "cuDeviceTotalMem",
        "reading the memory size of CUDA device {}", m_ordinal);
  return bytes;
}

int Device::multiprocessor_count() const {
  return attribute(m_ordinal, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "the multiprocessor count");
}
int Device::max_threads_per_block() const {
  return attribute(m_ordinal, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "the maximum threads per block");
}
int Device::max_shared_memory_per_block_optin() const {
  return attribute(m_ordinal, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                   "the opt-in shared memory per block");
}
std::size_t Device::l2_cache_size() const {
  return static_cast<std::size_t>(attribute(m_ordinal, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "the L2 cache size"));
}

void Device::make_current() const { ensure_current(*this); }
CUctx_st* Device::context() const { return primary_context(m_ordinal); }

void Device::synchronize() const {
  OnDevice on(*this);
  check(driver::get().cuCtxSynchronize(), "cuCtxSynchronize", "synchronizing CUDA device {}", m_ordinal);
}

Stream::Stream(Device device) : m_device(device) {
  OnDevice on(device);
  check(driver::get().cuStreamCreate(&m_stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate",
        "creating a stream on CUDA device {}", device.ordinal());
}
Stream::~Stream() {
  if (m_stream) {
    if (const auto* api = driver::loaded_driver()) api->cuStreamDestroy(m_stream);
  }
}
Stream::Stream(Stream&& other) noexcept : m_device(other.m_device), m_stream(std::exchange(other.m_stream, nullptr)) {}
Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    Stream old(std::move(*this));
    m_device = other.m_device;
    m_stream = std::exchange(other.m_stream, nullptr);
  }
  return *this;
}
void Stream::synchronize() const {
  check(driver::get().cuStreamSynchronize(m_stream), "cuStreamSynchronize",
        "synchronizing a stream on CUDA device {}", m_device.ordinal());
}

void stream_wait(StreamRef waiter, StreamRef producer, Device device) {
  if (waiter.get() == producer.get()) return;
  OnDevice on(device);
  const auto& api = driver::get();
  CUevent event = nullptr;
  check(api.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate",
        "ordering two streams on CUDA device {}", device.ordinal());
  CUresult recorded = api.cuEventRecord(event, producer);
  CUresult waited = recorded == CUDA_SUCCESS ? api.cuStreamWaitEvent(waiter, event, 0) : recorded;
  api.cuEventDestroy(event);  // released once the wait has passed it
  check(recorded, "cuEventRecord", "recording the producer's stream on CUDA device {}", device.ordinal());
  check(waited, "cuStreamWaitEvent", "making the launch's stream wait on CUDA device {}", device.ordinal());
}

Event::Event(Device device) {
  OnDevice on(device);
  check(driver::get().cuEventCreate(&m_event, CU_EVENT_DEFAULT), "cuEventCreate",
        "creating an event on CUDA device {}", device.ordinal());
}
Event::~Event() {
  if (m_event) {
    if (const auto* api = driver::loaded_driver()) api->cuEventDestroy(m_event);
  }
}
Event::Event(Event&& other) noexcept : m_event(std::exchange(other.m_event, nullptr)) {}
Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    Event old(std::move(*this));
    m_event = std::exchange(other.m_event, nullptr);
  }
  return *this;
}
void Event::record(StreamRef stream) {
  check(driver::get().cuEventRecord(m_event, stream), "cuEventRecord", "recording an event");
}
void Event::synchronize() const {
  check(driver::get().cuEventSynchronize(m_event), "cuEventSynchronize", "waiting for an event");
}
float Event::elapsed_ms(const Event& start, const Event& stop) {
  float ms = 0;
  check(driver::get().cuEventElapsedTime(&ms, start.m_event, stop.m_event), "cuEventElapsedTime",
        "reading the time between two events");
  return ms;
}

DeviceMemory::DeviceMemory(std::size_t bytes, Device device) : m_device(device), m_bytes(bytes) {
  if (bytes == 0) return;
  OnDevice on(device);
  CUdeviceptr p = 0;
  check(driver::get().cuMemAlloc(&p, bytes), "cuMemAlloc", "allocating {} bytes on CUDA device {}", bytes, device.ordinal());
  m_ptr = p;
}

void DeviceMemory::reset() noexcept {
  if (m_ptr == 0) return;
  const auto* api = driver::loaded_driver();
  const int ordinal = m_device.ordinal();
  if (api && ordinal >= 0 && ordinal < k_max_devices) {
    CUcontext ctx = g_contexts[ordinal].load(std::memory_order_acquire);
    CUcontext current = nullptr;
    api->cuCtxGetCurrent(&current);
    const bool switched = ctx && current != ctx && api->cuCtxSetCurrent(ctx) == CUDA_SUCCESS;
    api->cuMemFree(m_ptr);
    if (switched) api->cuCtxSetCurrent(current);
  }
  m_ptr = 0;
}

namespace {

void check_same_size(std::size_t count, std::size_t element_size, std::size_t bytes) {
  if (count * element_size != bytes) {
    throw UsageError(fmt::format("copying between host and a device buffer: the host span has {} elements "
                                 "and the device buffer {} (of {} bytes each)", count,
                                 element_size ? bytes / element_size : 0, element_size));
  }
}

}  // namespace

void DeviceMemory::copy_from_host(const void* source, std::size_t count, std::size_t element_size) {
  check_same_size(count, element_size, m_bytes);
  if (m_bytes == 0) return;
  OnDevice on(m_device);
  check(driver::get().cuMemcpyHtoD(m_ptr, source, m_bytes), "cuMemcpyHtoD", "copying {} bytes to CUDA device {}",
        m_bytes, m_device.ordinal());
}

void DeviceMemory::copy_to_host(void* destination, std::size_t count, std::size_t element_size) const {
  check_same_size(count, element_size, m_bytes);
  if (m_bytes == 0) return;
  OnDevice on(m_device);
  check(driver::get().cuMemcpyDtoH(destination, m_ptr, m_bytes), "cuMemcpyDtoH", "copying {} bytes from CUDA device {}",
        m_bytes, m_device.ordinal());
}

void DeviceMemory::copy_from(const DeviceMemory& source, StreamRef stream) {
  check_same_size(source.m_bytes, 1, m_bytes);
  if (m_bytes == 0) return;
  OnDevice on(m_device);
  check(driver::get().cuMemcpyDtoDAsync(m_ptr, source.m_ptr, m_bytes, stream), "cuMemcpyDtoDAsync",
        "copying {} bytes within CUDA device {}", m_bytes, m_device.ordinal());
}

void DeviceMemory::fill_bytes(unsigned char value) {
  if (m_bytes == 0) return;
  OnDevice on(m_device);
  check(driver::get().cuMemsetD8(m_ptr, value, m_bytes), "cuMemsetD8", "setting {} bytes on CUDA device {}", m_bytes,
        m_device.ordinal());
}

}  // namespace kjit
