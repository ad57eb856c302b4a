// kjit::Event: a CUDA event (RAII), recorded on a stream, for timing and ordering.
#pragma once

#include <kjit/export.hpp>

#include <kjit/device.hpp>
#include <kjit/stream.hpp>

struct CUevent_st;

namespace kjit {

class KJIT_API Event {
public:
  explicit Event(Device device = Device::current());
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(StreamRef stream = {});
  void synchronize() const;
  // Milliseconds between two recorded events.
  static float elapsed_ms(const Event& start, const Event& stop);
  CUevent_st* handle() const noexcept { return m_event; }

private:
  CUevent_st* m_event = nullptr;
};

}  // namespace kjit
