// kjit::Device, kjit::Stream, kjit::Event and kjit::DeviceBuffer<T>: RAII over the CUDA driver
// (opened at run time; nothing links libcuda). Each device's primary context is retained on
// first use and made current by the calls that need it. Throws DriverNotFoundError without a
// driver and CudaError when a driver call fails.
#pragma once

#include <kjit/export.hpp>

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
KJIT_API bool driver_available();
// Why the driver is not available ("" when it is).
KJIT_API std::string driver_unavailable_reason();
// Number of CUDA devices; 0 without a driver.
KJIT_API int device_count();

class KJIT_API Device {
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

class KJIT_API Stream {
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

class KJIT_API Event {
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

// Untyped device memory: `bytes` bytes on one device, freed with the object. Copies check that
// both sides have the same number of elements (UsageError otherwise).
class KJIT_API DeviceMemory {
public:
  DeviceMemory() = default;
  DeviceMemory(std::size_t bytes, Device device);
  ~DeviceMemory() { reset(); }
  DeviceMemory(DeviceMemory&& o) noexcept : m_device(o.m_device), m_bytes(o.m_bytes), m_ptr(o.m_ptr) {
    o.m_ptr = 0;
    o.m_bytes = 0;
  }
  DeviceMemory& operator=(DeviceMemory&& o) noexcept {
    if (this != &o) {
      reset();
      m_device = o.m_device;
      m_bytes = o.m_bytes;
      m_ptr = o.m_ptr;
      o.m_ptr = 0;
      o.m_bytes = 0;
    }
    return *this;
  }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  std::uint64_t address() const noexcept { return m_ptr; }
  std::size_t bytes() const noexcept { return m_bytes; }
  Device device() const noexcept { return m_device; }

  // `count` elements of `element_size` bytes each from or to the host; count * element_size
  // must be bytes().
  void copy_from_host(const void* source, std::size_t count, std::size_t element_size);
  void copy_to_host(void* destination, std::size_t count, std::size_t element_size) const;
  // Enqueues a device-to-device copy of `source` (same size) on `stream`.
  void copy_from(const DeviceMemory& source, CUstream_st* stream = nullptr);
  void fill_bytes(unsigned char value);

private:
  void reset() noexcept;
  Device m_device{};
  std::size_t m_bytes = 0;
  std::uint64_t m_ptr = 0;
};

// Device memory for `count` elements of T on one device.
template <class T>
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count, Device device = Device::current())
      : m_memory(count * sizeof(T), device), m_count(count) {}
  explicit DeviceBuffer(std::span<const T> host, Device device = Device::current())
      : DeviceBuffer(host.size(), device) {
    copy_from(host);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : m_memory(std::move(o.m_memory)), m_count(o.m_count) { o.m_count = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      m_memory = std::move(o.m_memory);
      m_count = o.m_count;
      o.m_count = 0;
    }
    return *this;
  }

  T* data() const noexcept { return reinterpret_cast<T*>(static_cast<std::uintptr_t>(m_memory.address())); }
  std::size_t size() const noexcept { return m_count; }
  std::size_t bytes() const noexcept { return m_memory.bytes(); }
  Device device() const noexcept { return m_memory.device(); }
  const DeviceMemory& memory() const noexcept { return m_memory; }

  void copy_from(std::span<const T> host) { m_memory.copy_from_host(host.data(), host.size(), sizeof(T)); }
  void copy_to(std::span<T> host) const { m_memory.copy_to_host(host.data(), host.size(), sizeof(T)); }
  // Enqueues a device-to-device copy of `source` (same size) on `stream`.
  void copy_from(const DeviceBuffer& source, CUstream_st* stream = nullptr) { m_memory.copy_from(source.m_memory, stream); }
  std::vector<T> to_host() const {
    std::vector<T> out(m_count);
    copy_to(out);
    return out;
  }
  // Sets every byte to `value` (tests poison outputs with 0xFF, a NaN pattern for floats).
  void fill_bytes(unsigned char value) { m_memory.fill_bytes(value); }

private:
  DeviceMemory m_memory;
  std::size_t m_count = 0;
};

}  // namespace kjit
