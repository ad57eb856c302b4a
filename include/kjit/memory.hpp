// kjit::DeviceMemory and kjit::DeviceBuffer<T>: device memory on one device, freed with the
// object, with checked copies to and from the host and between buffers.
#pragma once

#include <kjit/export.hpp>

#include <kjit/device.hpp>
#include <kjit/stream.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace kjit {

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
  void copy_from(const DeviceMemory& source, StreamRef stream = {});
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
  void copy_from(const DeviceBuffer& source, StreamRef stream = {}) { m_memory.copy_from(source.m_memory, stream); }
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
