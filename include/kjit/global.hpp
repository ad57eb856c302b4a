// kjit::Global<T>: a typed handle to a __constant__ or __device__ variable of a loaded module
// (Module::global<T>(name)), and kjit::GlobalHandle, its untyped form. T is the variable's type
// (its size must equal sizeof(T)), or E[] for an array of E (its size must be a multiple of
// sizeof(E); count() says how many). Copies to and from the host are synchronous, or enqueued on
// a stream (the *_async forms; the host memory must stay valid until the stream reaches them).
// Throws UsageError for a size mismatch (both sizes in the message) and CudaError when a copy fails.
#pragma once

#include <kjit/device.hpp>
#include <kjit/stream.hpp>
#include <kjit/export.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

struct CUstream_st;

namespace kjit {

namespace detail {
struct ModuleState;
}  // namespace detail

class KJIT_API GlobalHandle {
public:
  GlobalHandle() = default;

  const std::string& name() const noexcept { return m_name; }
  std::uint64_t address() const noexcept { return m_address; }  // the device address
  std::size_t bytes() const noexcept { return m_bytes; }
  Device device() const noexcept { return m_device; }
  explicit operator bool() const noexcept { return m_address != 0; }

  // Exactly bytes() bytes from or to the host (UsageError for another size).
  void copy_from_host(const void* source, std::size_t bytes);
  void copy_to_host(void* destination, std::size_t bytes) const;
  // Enqueued on `stream`; the host memory must stay valid until the stream reaches the copy.
  void copy_from_host_async(const void* source, std::size_t bytes, StreamRef stream);
  void copy_to_host_async(void* destination, std::size_t bytes, StreamRef stream) const;

protected:
  friend class Module;
  GlobalHandle(std::shared_ptr<detail::ModuleState> module, std::string name, std::uint64_t address,
               std::size_t bytes, Device device)
      : m_module(std::move(module)), m_name(std::move(name)), m_address(address), m_bytes(bytes), m_device(device) {}

  std::shared_ptr<detail::ModuleState> m_module;  // keeps the module (and the variable) loaded
  std::string m_name;
  std::uint64_t m_address = 0;
  std::size_t m_bytes = 0;
  Device m_device;
};

template <class T>
class Global : public GlobalHandle {
  static_assert(std::is_trivially_copyable_v<T>, "a module global's type must be trivially copyable");

public:
  Global() = default;
  explicit Global(GlobalHandle handle) : GlobalHandle(std::move(handle)) {}

  T* data() const noexcept { return reinterpret_cast<T*>(static_cast<std::uintptr_t>(address())); }
  void copy_from(const T& value) { copy_from_host(&value, sizeof(T)); }
  T to_host() const {
    T value;
    copy_to_host(&value, sizeof(T));
    return value;
  }
  void copy_from_async(const T& value, StreamRef stream) { copy_from_host_async(&value, sizeof(T), stream); }
  void to_host_async(T& value, StreamRef stream) const { copy_to_host_async(&value, sizeof(T), stream); }
};

template <class E>
class Global<E[]> : public GlobalHandle {
  static_assert(std::is_trivially_copyable_v<E>, "a module global's type must be trivially copyable");

public:
  Global() = default;
  explicit Global(GlobalHandle handle) : GlobalHandle(std::move(handle)) {}

  E* data() const noexcept { return reinterpret_cast<E*>(static_cast<std::uintptr_t>(address())); }
  std::size_t count() const noexcept { return bytes() / sizeof(E); }
  void copy_from(std::span<const E> values) { copy_from_host(values.data(), values.size_bytes()); }
  std::vector<E> to_host() const {
    std::vector<E> out(count());
    copy_to_host(out.data(), out.size() * sizeof(E));
    return out;
  }
  void copy_from_async(std::span<const E> values, StreamRef stream) {
    copy_from_host_async(values.data(), values.size_bytes(), stream);
  }
  void to_host_async(std::span<E> values, StreamRef stream) const {
    copy_to_host_async(values.data(), values.size_bytes(), stream);
  }
};

}  // namespace kjit
