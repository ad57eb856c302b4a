// kjit::kernels::Kernels<T>: the lecture kernels of kernels_src, loaded once, launched with
// the shape each call needs.
#include <kjit/error.hpp>
#include <kjit/kernels.hpp>
#include <kjit/loader.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <type_traits>

namespace kjit::kernels {
namespace {

// 16 bytes per access.
template <class T> constexpr int pack_width = static_cast<int>(16 / sizeof(T));

// The fused softmax shapes, (width, block, items): with 16-byte packs, and one element at a
// time for rows that are not a whole number of packs or pointers that are not 16-byte aligned.
template <class T>
std::vector<std::array<int, 3>> fused_shapes() {
  const int w = pack_width<T>;
  return {{w, 128, 2}, {w, 256, 4}, {w, 512, 8}, {w, 1024, 8}, {1, 256, 4}, {1, 1024, 8}};
}
constexpr int softmax_online_block = 1024;

bool aligned16(const void* a, const void* b) {
  return ((reinterpret_cast<std::uintptr_t>(a) | reinterpret_cast<std::uintptr_t>(b)) & 15u) == 0;
}

}  // namespace

template <> const char* device_type_name<float>() { return "float"; }
template <> const char* device_type_name<half>() { return "__half"; }
template <> const char* device_type_name<bfloat16>() { return "__nv_bfloat16"; }

template <class T>
std::string elementwise_name(const char* op) {
  return fmt::format("kjit::{}<{}, {}, {}>", op, device_type_name<T>(), Kernels<T>::elementwise_block,
                     Kernels<T>::elementwise_unroll);
}

template <class T>
Kernels<T>::Kernels(Device device, Runtime& runtime, TuneOptions tuning) {
  // The installed kernels_src only (a KJIT_KERNEL_PATH file of the same name must not stand in),
  // through the same requests as `kjit warm` of it: a warmed cache serves them.
  KernelLoader loader({.use_environment = false}, runtime);
  Module square = loader.load("square.cu", {}, device);
  Module gelu = loader.load("gelu.cu", {}, device);
  Module softmax = loader.load("softmax.cu", {}, device);
  Module mean = loader.load("mean.cu", {}, device);
  m_square = square.kernel<void(const T*, T*, unsigned long long)>(elementwise_name<T>("square"));
  m_gelu = gelu.kernel<void(const T*, T*, unsigned long long)>(elementwise_name<T>("gelu"));
  if constexpr (std::is_same_v<T, float>) {
    m_square_naive = square.kernel<void(const float*, float*, int, int)>("square_matrix_naive");
  }
  for (auto [w, block, items] : fused_shapes<T>()) {
    m_softmax_fused.push_back(
        {w, block, items,
         softmax.kernel<void(const T*, T*, int)>(
             fmt::format("kjit::softmax_fused<{}, {}, {}, {}>", device_type_name<T>(), w, block, items))});
  }
  std::stable_sort(m_softmax_fused.begin(), m_softmax_fused.end(), [](const auto& a, const auto& b) {
    return a.width * a.block * a.items < b.width * b.block * b.items;
  });
  m_softmax_online = softmax.kernel<void(const T*, T*, int)>(
      fmt::format("kjit::softmax_online<{}, {}>", device_type_name<T>(), softmax_online_block));
  m_mean = mean.kernel<void(const T*, unsigned long long, double*, unsigned int*, float*)>(mean_kernel_name());

  // Softmax: every fused shape, then the online kernel; the hand-picked rule's choice (the
  // smallest fused shape that holds a row) is the first one a call allows.
  std::vector<TuneCandidate> softmax_candidates;
  std::vector<KernelHandle> softmax_kernels;
  for (const auto& s : m_softmax_fused) {
    softmax_candidates.push_back({.kernel = fmt::format("kjit::softmax_fused<{}, {}, {}, {}>", device_type_name<T>(),
                                                        s.width, s.block, s.items),
                                  .block = static_cast<unsigned>(s.block)});
    softmax_kernels.push_back(s.kernel);
  }
  softmax_candidates.push_back({.kernel = fmt::format("kjit::softmax_online<{}, {}>", device_type_name<T>(),
                                                      softmax_online_block),
                                .block = softmax_online_block});
  softmax_kernels.push_back(m_softmax_online);
  m_softmax_tuner = std::make_unique<TunerEngine>("kernels_src/softmax.cu", softmax.compile_result().key,
                                                  std::move(softmax_candidates), std::move(softmax_kernels), tuning,
                                                  runtime);

  // The mean's grid: blocks per SM, the occupancy limit first (the hand-picked rule), then fewer.
  m_sms = static_cast<unsigned>(device.multiprocessor_count());
  const int most = std::max(1, m_mean.max_active_blocks_per_sm(mean_block));
  std::vector<TuneCandidate> mean_candidates{{.kernel = mean_kernel_name(), .param = most, .block = mean_block}};
  for (int bps : {1, 2, 4}) {
    if (bps < most) mean_candidates.push_back({.kernel = mean_kernel_name(), .param = bps, .block = mean_block});
  }
  std::vector<KernelHandle> mean_kernels(mean_candidates.size(), m_mean);
  m_mean_tuner = std::make_unique<TunerEngine>("kernels_src/mean.cu", mean.compile_result().key,
                                               std::move(mean_candidates), std::move(mean_kernels), tuning, runtime);
  m_mean_blocks = m_sms * static_cast<unsigned>(most);
  m_mean_partials = DeviceBuffer<double>(m_mean_blocks, device);
  m_mean_ticket = DeviceBuffer<unsigned int>(1, device);
  m_mean_ticket.fill_bytes(0);
}

template <class T>
void Kernels<T>::map(const Map& kernel, const T* x, T* y, std::size_t n, StreamRef stream) const {
  if (n == 0) return;
  const std::size_t packs = (n + pack_width<T> - 1) / pack_width<T>;
  LaunchConfig c;
  c.grid = Dim3(ceil_div(packs, std::size_t{elementwise_block} * elementwise_unroll));
  c.block = Dim3(elementwise_block);
  c.stream = stream;
  kernel.launch(c, x, y, n);
}

template <class T>
void Kernels<T>::square(const T* x, T* y, std::size_t n, StreamRef stream) const {
  map(m_square, x, y, n, stream);
}

template <class T>
void Kernels<T>::gelu(const T* x, T* y, std::size_t n, StreamRef stream) const {
  map(m_gelu, x, y, n, stream);
}

template <class T>
auto Kernels<T>::softmax_shape(int cols, bool aligned) const -> const SoftmaxShape& {
  static const SoftmaxShape none{};
  for (const auto& s : m_softmax_fused) {
    if (s.width > 1 && !(aligned && cols % s.width == 0)) continue;
    if (cols <= s.width * s.block * s.items) return s;
  }
  return none;
}

template <class T>
void Kernels<T>::softmax(const T* x, T* y, int rows, int cols, StreamRef stream) const {
  if (rows < 1 || cols < 1) {
    throw UsageError(fmt::format("running the softmax kernel on {} rows of {} columns: both must be at least 1",
                                 rows, cols));
  }
  // Which candidates hold a row of this length for these pointers: part of the key.
  const bool aligned = aligned16(x, y);
  const std::size_t count = m_softmax_fused.size() + 1;
  std::uint32_t fits = 1u << m_softmax_fused.size();  // the online kernel holds any row
  for (std::size_t i = 0; i < m_softmax_fused.size(); ++i) {
    const auto& s = m_softmax_fused[i];
    if ((s.width == 1 || (aligned && cols % s.width == 0)) && cols <= s.width * s.block * s.items) fits |= 1u << i;
  }
  const TuneKey key = TuneKey().add("type", device_type_name<T>()).add_bucketed("rows", rows)
                          .add_bucketed("cols", cols).add("fits", static_cast<long long>(fits));
  auto launch = [&](std::size_t i, CUstream_st* s) {
    LaunchConfig c;
    c.grid = Dim3(static_cast<unsigned>(rows));
    c.stream = s;
    if (i < m_softmax_fused.size()) {
      c.block = Dim3(static_cast<unsigned>(m_softmax_fused[i].block));
      m_softmax_fused[i].kernel.launch(c, x, y, cols);
    } else {
      c.block = Dim3(softmax_online_block);
      m_softmax_online.launch(c, x, y, cols);
    }
  };
  const TuneDecision* d = m_softmax_tuner->find(key);
  if (d == nullptr) {
    std::vector<bool> allowed(count);
    for (std::size_t i = 0; i < count; ++i) allowed[i] = (fits >> i) & 1u;
    d = &m_softmax_tuner->decide(key, launch, {}, stream, allowed);
  }
  launch(d->chosen, stream);
}

template <class T>
void Kernels<T>::mean(const T* x, std::size_t n, float* out, StreamRef stream) {
  if (n == 0) throw UsageError("running the mean kernel on 0 elements: the mean of nothing is undefined");
  const std::size_t packs = (n + pack_width<T> - 1) / pack_width<T>;
  auto launch = [&](std::size_t i, CUstream_st* s) {
    const auto per_sm = static_cast<std::size_t>(m_mean_tuner->candidate(i).param);
    LaunchConfig c;
    c.grid = Dim3(static_cast<unsigned>(std::min<std::size_t>(m_sms * per_sm, ceil_div(packs, mean_block))));
    c.block = Dim3(mean_block);
    c.stream = s;
    m_mean.launch(c, x, n, m_mean_partials.data(), m_mean_ticket.data(), out);
  };
  const TuneKey key = TuneKey().add("type", device_type_name<T>()).add_bucketed("n", static_cast<long long>(n));
  const TuneDecision* d = m_mean_tuner->find(key);
  if (d == nullptr) d = &m_mean_tuner->decide(key, launch, {}, stream);
  launch(d->chosen, stream);
}

template <class T>
void Kernels<T>::square_naive(const float* x, float* y, int width, int height, StreamRef stream) const {
  if constexpr (!std::is_same_v<T, float>) {
    throw UsageError("running the naive square kernel: it exists for float only");
  } else {
    LaunchConfig c;
    c.grid = Dim3(ceil_div(static_cast<std::size_t>(width), 16), ceil_div(static_cast<std::size_t>(height), 16));
    c.block = Dim3(16, 16);
    c.stream = stream;
    m_square_naive.launch(c, x, y, width, height);
  }
}

template <class T>
std::string Kernels<T>::square_kernel_name() const {
  return elementwise_name<T>("square");
}

template <class T>
std::string Kernels<T>::softmax_kernel_name(int cols, bool aligned) const {
  const SoftmaxShape& s = softmax_shape(cols, aligned);
  if (!s.kernel) return fmt::format("kjit::softmax_online<{}, {}>", device_type_name<T>(), softmax_online_block);
  return fmt::format("kjit::softmax_fused<{}, {}, {}, {}>", device_type_name<T>(), s.width, s.block, s.items);
}

template <class T>
std::string Kernels<T>::mean_kernel_name() const {
  return fmt::format("kjit::mean<{}, {}, {}>", device_type_name<T>(), mean_block, mean_unroll);
}

template <class T>
std::vector<std::pair<std::string, std::string>> Kernels<T>::instantiations() {
  std::vector<std::pair<std::string, std::string>> out = {{"square.cu", elementwise_name<T>("square")},
                                                          {"gelu.cu", elementwise_name<T>("gelu")}};
  for (auto [w, block, items] : fused_shapes<T>()) {
    out.emplace_back("softmax.cu",
                     fmt::format("kjit::softmax_fused<{}, {}, {}, {}>", device_type_name<T>(), w, block, items));
  }
  out.emplace_back("softmax.cu", fmt::format("kjit::softmax_online<{}, {}>", device_type_name<T>(), softmax_online_block));
  out.emplace_back("mean.cu", fmt::format("kjit::mean<{}, {}, {}>", device_type_name<T>(), mean_block, mean_unroll));
  return out;
}

template class Kernels<float>;
template class Kernels<half>;
template class Kernels<bfloat16>;

}  // namespace kjit::kernels
