// kjit::kernels: typed host entry points for the lecture kernels shipped in kernels_src
// (square, GELU, row-wise softmax, mean), for float, kjit::half and kjit::bfloat16. A Kernels<T>
// loads the programs once from the installed kernels_src (KernelLoader, with kjit.json's
// instantiations; the cache applies, and `kjit warm` fills it). Softmax's instantiation and the
// mean's grid are tuned (kjit::Tuner) once per device and shape bucket, the decision cached like
// a kernel; with KJIT_TUNE=off (or a shape's first call timed under it) the hand-picked rule,
// which is always the first candidate, decides. A decided call only enqueues work: it takes no
// lock and allocates nothing.
//
//   kjit::kernels::Kernels<float> k;
//   k.softmax(x.data(), y.data(), rows, cols, stream.handle());
//
// Throws like Runtime::load (CompileError, CudaError, DriverNotFoundError) when loading, and
// UsageError for a shape it cannot run (rows or cols < 1).
#pragma once

#include <kjit/export.hpp>

#include <kjit/device.hpp>
#include <kjit/memory.hpp>
#include <kjit/stream.hpp>
#include <kjit/float16.hpp>
#include <kjit/kernel.hpp>
#include <kjit/runtime.hpp>
#include <kjit/tune.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kjit::kernels {

template <class T>
class KJIT_API Kernels {
public:
  explicit Kernels(Device device = Device::current(), Runtime& runtime = Runtime::global(),
                   TuneOptions tuning = {});

  // y[i] = x[i]^2 and y[i] = gelu_tanh(x[i]) for n elements (x and y may not overlap partly).
  void square(const T* x, T* y, std::size_t n, StreamRef stream = {}) const;
  void gelu(const T* x, T* y, std::size_t n, StreamRef stream = {}) const;
  // Softmax of each of `rows` rows of `cols` contiguous elements.
  void softmax(const T* x, T* y, int rows, int cols, StreamRef stream = {}) const;
  // *out = mean of n elements (float), the same value run after run on one device. Uses this
  // object's workspace: one mean at a time per Kernels object.
  void mean(const T* x, std::size_t n, float* out, StreamRef stream = {});

  // The lecture's naive 16x16 square (float only), for reference.
  void square_naive(const float* x, float* y, int width, int height, StreamRef stream = {}) const;

  // Name expressions of the instantiations a call would use (for dumps and profiling); softmax's
  // is the hand-picked one (the smallest that holds a row), which tuning may better.
  std::string square_kernel_name() const;
  std::string softmax_kernel_name(int cols, bool aligned) const;
  std::string mean_kernel_name() const;

  // Measured on an H200 (bench_kernels --sweep): one 16-byte pack per thread in blocks of 256
  // beat 2, 4 and 8 packs per thread and other block sizes at every size.
  static constexpr int elementwise_block = 256, elementwise_unroll = 1;
  static constexpr int mean_block = 512, mean_unroll = 4;

  // Every (file, name expression) a Kernels<T> loads: kernels_src/kjit.json must list them.
  static std::vector<std::pair<std::string, std::string>> instantiations();

private:
  struct SoftmaxShape {
    int width, block, items;  // capacity = block * items * width elements
    Kernel<void(const T*, T*, int)> kernel;
  };
  using Map = Kernel<void(const T*, T*, unsigned long long)>;
  void map(const Map& kernel, const T* x, T* y, std::size_t n, StreamRef stream) const;
  const SoftmaxShape& softmax_shape(int cols, bool aligned) const;

  Map m_square, m_gelu;
  Kernel<void(const float*, float*, int, int)> m_square_naive;
  std::vector<SoftmaxShape> m_softmax_fused;  // ascending capacity
  Kernel<void(const T*, T*, int)> m_softmax_online;
  Kernel<void(const T*, unsigned long long, double*, unsigned int*, float*)> m_mean;
  unsigned m_mean_blocks = 0;  // the most any candidate launches
  unsigned m_sms = 1;
  DeviceBuffer<double> m_mean_partials;
  DeviceBuffer<unsigned int> m_mean_ticket;
  // Candidates: every fused shape (ascending capacity), then online; the mean's blocks per SM.
  std::unique_ptr<TunerEngine> m_softmax_tuner, m_mean_tuner;
};

// The device type name NVRTC knows each element type by: "float", "__half", "__nv_bfloat16".
template <class T> const char* device_type_name();
template <> KJIT_API const char* device_type_name<float>();
template <> KJIT_API const char* device_type_name<half>();
template <> KJIT_API const char* device_type_name<bfloat16>();

extern template class KJIT_API Kernels<float>;
extern template class KJIT_API Kernels<half>;
extern template class KJIT_API Kernels<bfloat16>;

}  // namespace kjit::kernels
