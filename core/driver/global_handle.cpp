// kjit::GlobalHandle: copies to and from a module's __device__ or __constant__ variable.
#include <kjit/error.hpp>
#include <kjit/global.hpp>

#include "core/driver/driver_api.hpp"

#include <fmt/format.h>

namespace kjit {
namespace {

void check_size(const GlobalHandle& g, std::size_t bytes, const char* direction) {
  if (bytes != g.bytes()) {
    throw UsageError(fmt::format("copying {} global {}: the host side has {} bytes, the variable {}", direction,
                                 g.name(), bytes, g.bytes()));
  }
}

}  // namespace

void GlobalHandle::copy_from_host(const void* source, std::size_t bytes) {
  check_size(*this, bytes, "to");
  driver::ContextGuard on(driver::primary_context(m_device.ordinal()), driver::get());
  driver::check(driver::get().cuMemcpyHtoD(m_address, source, bytes), "cuMemcpyHtoD",
                "copying {} bytes to global {} on CUDA device {}", bytes, m_name, m_device.ordinal());
}

void GlobalHandle::copy_to_host(void* destination, std::size_t bytes) const {
  check_size(*this, bytes, "from");
  driver::ContextGuard on(driver::primary_context(m_device.ordinal()), driver::get());
  driver::check(driver::get().cuMemcpyDtoH(destination, m_address, bytes), "cuMemcpyDtoH",
                "copying {} bytes from global {} on CUDA device {}", bytes, m_name, m_device.ordinal());
}

void GlobalHandle::copy_from_host_async(const void* source, std::size_t bytes, StreamRef stream) {
  check_size(*this, bytes, "to");
  driver::ContextGuard on(driver::primary_context(m_device.ordinal()), driver::get());
  driver::check(driver::get().cuMemcpyHtoDAsync(m_address, source, bytes, stream), "cuMemcpyHtoDAsync",
                "enqueuing a copy of {} bytes to global {} on CUDA device {}", bytes, m_name, m_device.ordinal());
}

void GlobalHandle::copy_to_host_async(void* destination, std::size_t bytes, StreamRef stream) const {
  check_size(*this, bytes, "from");
  driver::ContextGuard on(driver::primary_context(m_device.ordinal()), driver::get());
  driver::check(driver::get().cuMemcpyDtoHAsync(destination, m_address, bytes, stream), "cuMemcpyDtoHAsync",
                "enqueuing a copy of {} bytes from global {} on CUDA device {}", bytes, m_name, m_device.ordinal());
}

}  // namespace kjit
