// kjit::driver::UniqueHandle<H, Release>: the one RAII owner for driver handles (modules,
// streams, ...): move-only, releases through Release when it owns a handle. Never throws.
#pragma once

#include <utility>

namespace kjit::driver {

template <class H, auto Release>
class UniqueHandle {
public:
  UniqueHandle() = default;
  explicit UniqueHandle(H handle) noexcept : m_handle(handle) {}
  UniqueHandle(UniqueHandle&& other) noexcept : m_handle(std::exchange(other.m_handle, H{})) {}
  UniqueHandle& operator=(UniqueHandle&& other) noexcept {
    UniqueHandle old(std::exchange(m_handle, std::exchange(other.m_handle, H{})));
    return *this;  // `old` releases the previous handle; self-move leaves the handle in place
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  ~UniqueHandle() {
    if (m_handle) Release(m_handle);
  }
  H get() const noexcept { return m_handle; }
  H release() noexcept { return std::exchange(m_handle, H{}); }
  explicit operator bool() const noexcept { return m_handle != H{}; }

private:
  H m_handle{};
};

}  // namespace kjit::driver
