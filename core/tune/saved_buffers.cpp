#include "core/tune/saved_buffers.hpp"

#include "core/driver/driver_api.hpp"

namespace kjit::tune {

SavedBuffers::SavedBuffers(const TuneBuffers& buffers, CUstream_st* stream) : m_buffers(buffers), m_stream(stream) {
  const auto& api = driver::get();
  for (const auto& [ptr, bytes] : m_buffers.restore) {
    CUdeviceptr copy = 0;
    driver::check(api.cuMemAlloc(&copy, bytes), "cuMemAlloc", "keeping a copy of a tuned kernel's output");
    m_copies.push_back(copy);
    driver::check(api.cuMemcpyDtoDAsync(copy, reinterpret_cast<CUdeviceptr>(ptr), bytes, stream),
                  "cuMemcpyDtoDAsync", "keeping a copy of a tuned kernel's output");
  }
}

SavedBuffers::~SavedBuffers() {
  const auto& api = driver::get();
  api.cuStreamSynchronize(m_stream);
  for (CUdeviceptr c : m_copies) api.cuMemFree(c);
}

void SavedBuffers::put_back() const {
  const auto& api = driver::get();
  for (const auto& [ptr, bytes] : m_buffers.reset_to_zero) {
    driver::check(api.cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(ptr), 0, bytes, m_stream), "cuMemsetD8Async",
                  "zeroing a tuned kernel's output");
  }
  for (std::size_t i = 0; i < m_copies.size(); ++i) {
    const auto& [ptr, bytes] = m_buffers.restore[i];
    driver::check(api.cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(ptr), m_copies[i], bytes, m_stream),
                  "cuMemcpyDtoDAsync", "restoring a tuned kernel's output");
  }
}

}  // namespace kjit::tune
