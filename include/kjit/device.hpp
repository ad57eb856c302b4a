// kjit::Device: a CUDA device, over the driver (opened at run time; nothing links libcuda). Each
// device's primary context is retained on first use and made current by the calls that need it.
// Streams, events and device memory have headers of their own (stream.hpp, event.hpp,
// memory.hpp). Throws DriverNotFoundError without a driver and CudaError when a
// driver call fails.
#pragma once

#include <kjit/export.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

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

}  // namespace kjit
