// kjit::Stream: a CUDA stream of kjit's own (RAII); kjit::StreamRef: the stream a call runs on,
// as every kjit call that takes a stream takes it: a kjit::Stream, a raw CUstream (another
// library's: torch's or CuPy's current stream), or the default stream ({} or nullptr).
#pragma once

#include <kjit/export.hpp>

#include <kjit/device.hpp>

struct CUstream_st;

namespace kjit {

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

class StreamRef {
public:
  constexpr StreamRef() noexcept = default;  // the default stream
  constexpr StreamRef(CUstream_st* stream) noexcept : m_stream(stream) {}  // NOLINT: a raw CUstream converts
  StreamRef(const Stream& stream) noexcept : m_stream(stream.handle()) {}  // NOLINT: so does a Stream
  constexpr CUstream_st* get() const noexcept { return m_stream; }
  constexpr operator CUstream_st*() const noexcept { return m_stream; }  // NOLINT: hands it to the driver
  constexpr bool is_default() const noexcept { return m_stream == nullptr; }

private:
  CUstream_st* m_stream = nullptr;
};

// Orders work across two streams of `device`: what is enqueued on `waiter` after this call waits
// for what was enqueued on `producer` before it (an event recorded there, waited on by `waiter`;
// the host does not wait). Nothing when both are the same stream. The caller's current context
// is current again when it returns. For data another library produced on its stream (DLPack's and
// __cuda_array_interface__'s stream), used on kjit's.
KJIT_API void stream_wait(StreamRef waiter, StreamRef producer, Device device);

}  // namespace kjit
