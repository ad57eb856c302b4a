// kjit::Device, kjit::Stream, kjit::Event and kjit::DeviceBuffer<T>: RAII over the CUDA driver
// (opened at run time; nothing links libcuda). Each device's primary context is retained on
// first use and made current by the calls that need it. Throws DriverNotFoundError without a
// driver and CudaError when a driver call fails.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

struct CUstream_st;
struct CUevent_st;
struct CUctx_st;

namespace kjit {

// True when libcuda.so.1 could be opened and initialized (never throws).
bool driver_available();
// Why the driver is not available ("" when it is).
std::string driver_unavailable_reason();
// Number of CUDA devices; 0 without a driver.
int device_count();

class Device {
public:
  Device() = default;  // ordinal 0
  // The device kjit uses when none is named: ordinal 0, or the current context's device.
  static Device current();
  static Device get(int ordinal);  // throws UsageError for an ordinal out of range

  int ordinal() const noexcept { return m_ordinal; }
  std::string name() const;
  int compute_capability() const;  // 90 for 9.0
  std::uint64_t total_memory() const;
  int multiprocessor_count() const;
  int max_threads_per_block() const;
  int max_shared_memory_per_block_optin() const;
  std::size_t l2_cache_size() const;
  // Makes this device's primary context current on the calling thread.
  void make_current() const;
  CUctx_st* context() const;  // the retained primary context
  void synchronize() const;

  friend bool operator==(const Device&, const Device&) = default;

private:
  explicit Device(int ordinal) : m_ordinal(ordinal) {}
  int m_ordinal = 0;
};

class Stream {
public:
  // A new non-blocking stream on the device.
  explicit Stream(Device device = Device::current());
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  CUstream_st* handle() const noexcept { return m_stream; }
  void synchronize() const;
  Device device() const noexcept { return m_device; }

private:
  Device m_device;
  CUstream_st* m_stream = nullptr;
};

class Event {
public:
  explicit Event(Device device = Device::current());
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(CUstream_st* stream = nullptr);
  void synchronize() const;
  // Milliseconds between two recorded events.
  static float elapsed_ms(const Event& start, const Event& stop);
  CUevent_st* handle() const noexcept { return m_event; }

private:
  CUevent_st* m_event = nullptr;
};

namespace detail {
std::uint64_t mem_alloc(std::size_t bytes, const Device& device);
void mem_free(std::uint64_t ptr, int ordinal) noexcept;
void copy_to_device(std::uint64_t dst, const void* src, std::size_t bytes, const Device& device);
void copy_to_host(void* dst, std::uint64_t src, std::size_t bytes, const Device& device);
[[noreturn]] void throw_size_mismatch(std::size_t host, std::size_t device, std::size_t element);
void mem_set_d8(std::uint64_t dst, unsigned char value, std::size_t bytes, const Device& device);
void copy_on_device(std::uint64_t dst, std::uint64_t src, std::size_t bytes, const Device& device, CUstream_st* stream);
}  // namespace detail

// Device memory for `count` elements of T on one device.
template <class T>
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count, Device device = Device::current())
      : m_device(device), m_count(count), m_ptr(count ? detail::mem_alloc(count * sizeof(T), device) : 0) {}
  explicit DeviceBuffer(std::span<const T> host, Device device = Device::current())
      : DeviceBuffer(host.size(), device) {
    copy_from(host);
  }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : m_device(o.m_device), m_count(o.m_count), m_ptr(o.m_ptr) {
    o.m_ptr = 0;
    o.m_count = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      m_device = o.m_device;
      m_count = o.m_count;
      m_ptr = o.m_ptr;
      o.m_ptr = 0;
      o.m_count = 0;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() const noexcept { return reinterpret_cast<T*>(static_cast<std::uintptr_t>(m_ptr)); }
  std::size_t size() const noexcept { return m_count; }
  std::size_t bytes() const noexcept { return m_count * sizeof(T); }
  Device device() const noexcept { return m_device; }

  void copy_from(std::span<const T> host) {
    check_size(host.size());
    detail::copy_to_device(m_ptr, host.data(), host.size() * sizeof(T), m_device);
  }
  void copy_to(std::span<T> host) const {
    check_size(host.size());
    detail::copy_to_host(host.data(), m_ptr, host.size() * sizeof(T), m_device);
  }
  // Enqueues a device-to-device copy of `source` (same size) on `stream`.
  void copy_from(const DeviceBuffer& source, CUstream_st* stream = nullptr) {
    check_size(source.size());
    detail::copy_on_device(m_ptr, source.m_ptr, bytes(), m_device, stream);
  }
  std::vector<T> to_host() const {
    std::vector<T> out(m_count);
    copy_to(out);
    return out;
  }
  // Sets every byte to `value` (tests poison outputs with 0xFF, a NaN pattern for floats).
  void fill_bytes(unsigned char value) { detail::mem_set_d8(m_ptr, value, bytes(), m_device); }

private:
  void check_size(std::size_t n) const {
    if (n != m_count) detail::throw_size_mismatch(n, m_count, sizeof(T));
  }
  void reset() noexcept {
    if (m_ptr) detail::mem_free(m_ptr, m_device.ordinal());
    m_ptr = 0;
  }
  Device m_device{};
  std::size_t m_count = 0;
  std::uint64_t m_ptr = 0;
};

}  // namespace kjit
