// kjit::tune::SavedBuffers: a tuned call's outputs kept aside while its candidates are timed. The
// restore list is copied to device memory of its own (freed with the object, after the stream
// synchronized); put_back() zeroes the reset list and copies the restore list back, so each timing
// run, and the caller's launch after it, starts from the caller's data. Throws DriverError.
#pragma once

#include <kjit/tune.hpp>

#include <cuda.h>

#include <vector>

namespace kjit::tune {

class SavedBuffers {
public:
  SavedBuffers(const TuneBuffers& buffers, CUstream_st* stream);
  ~SavedBuffers();
  SavedBuffers(const SavedBuffers&) = delete;
  SavedBuffers& operator=(const SavedBuffers&) = delete;

  // The outputs as they were: the reset ones zeroed, the restored ones copied back.
  void put_back() const;

private:
  const TuneBuffers& m_buffers;
  CUstream_st* m_stream;
  std::vector<CUdeviceptr> m_copies;
};

}  // namespace kjit::tune
