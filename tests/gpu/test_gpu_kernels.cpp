// GPU tests (label gpu) of the lecture kernels in kernels_src, through kjit::kernels: each
// against a double-precision CPU reference on random inputs (never zeros), with the output
// poisoned (all bits set: NaN) before every run so an element left unwritten fails. And
// kjit::bench on a kernel that counts its own launches.
#include "gpu/gpu_support.hpp"
#include "support/temp_dir.hpp"

#include <kjit/bench.hpp>
#include <kjit/kernels.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>

namespace {

using kjit::bfloat16;
using kjit::half;

template <class T> T from_double(double v) { return T(static_cast<float>(v)); }
template <> float from_double<float>(double v) { return static_cast<float>(v); }
template <class T> double to_double(T v) { return static_cast<double>(static_cast<float>(v)); }

// Relative tolerance of one rounding to T, with room for a few float operations.
template <class T> double tolerance();
template <> double tolerance<float>() { return 2e-5; }
template <> double tolerance<half>() { return 2e-3; }
template <> double tolerance<bfloat16>() { return 1.6e-2; }

template <class T> const char* type_label();
template <> const char* type_label<float>() { return "float"; }
template <> const char* type_label<half>() { return "half"; }
template <> const char* type_label<bfloat16>() { return "bfloat16"; }

template <class T>
std::vector<T> random_values(std::size_t n, unsigned seed, float lo = 0.5f, float hi = 2.0f) {
  std::vector<T> out;
  out.reserve(n);
  for (float f : kjit::test::random_floats(n, seed, lo, hi)) out.push_back(from_double<T>(f));
  return out;
}

// A device buffer of `n` elements starting `offset` elements past a 256-byte-aligned
// allocation (offset 1 makes every pointer unaligned for 16-byte access).
template <class T>
struct OffsetBuffer {
  kjit::DeviceBuffer<T> storage;
  std::size_t offset, n;
  OffsetBuffer(std::size_t count, std::size_t off) : storage(count + off + 1), offset(off), n(count) {}
  T* data() const { return storage.data() + offset; }
  void upload(const std::vector<T>& host) {
    std::vector<T> all(storage.size());
    std::copy(host.begin(), host.end(), all.begin() + static_cast<std::ptrdiff_t>(offset));
    storage.copy_from(all);
  }
  std::vector<T> download() const {
    auto all = storage.to_host();
    return {all.begin() + static_cast<std::ptrdiff_t>(offset), all.begin() + static_cast<std::ptrdiff_t>(offset + n)};
  }
  void poison() { storage.fill_bytes(0xFF); }
};

// Every element within tolerance (NaN fails); reports the first few that are not.
template <class T>
void check_close(const std::vector<T>& got, const std::vector<double>& want, double rel, double abs,
                 const std::string& what) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0;
  std::string first;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = to_double(got[i]);
    if (!(std::abs(g - want[i]) <= abs + rel * std::abs(want[i]))) {
      if (bad++ < 3) first += fmt::format(" [{}] got {} want {};", i, g, want[i]);
    }
  }
  INFO(what, ": ", bad, " of ", got.size(), " elements wrong:", first);
  CHECK(bad == 0);
}

template <class T>
void check_elementwise(const char* name, double (*reference)(double), double rel,
                       void (kjit::kernels::Kernels<T>::*run)(const T*, T*, std::size_t, kjit::StreamRef) const) {
  kjit::kernels::Kernels<T> k;
  for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{4099}, std::size_t{1000003}}) {
    for (std::size_t offset : {std::size_t{0}, std::size_t{1}}) {
      auto host = random_values<T>(n, static_cast<unsigned>(n + offset));
      OffsetBuffer<T> x(n, offset), y(n, offset);
      x.upload(host);
      y.poison();
      (k.*run)(x.data(), y.data(), n, nullptr);
      std::vector<double> want;
      for (const T& v : host) want.push_back(to_double(from_double<T>(reference(to_double(v)))));
      check_close(y.download(), want, rel, 0.0, fmt::format("{}<{}> n={} offset={}", name, type_label<T>(), n, offset));
    }
  }
}

double square_ref(double v) { return v * v; }
double gelu_ref(double v) { return 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); }

template <class T>
void check_softmax(float shift) {
  kjit::kernels::Kernels<T> k;
  struct Shape { int rows, cols; std::size_t offset; };
  for (Shape s : {Shape{3, 1, 0}, Shape{5, 7, 0}, Shape{4, 1000, 0}, Shape{4, 1024, 0}, Shape{3, 1024, 1},
                  Shape{2, 4096, 0}, Shape{2, 16384, 0}, Shape{2, 32768, 0}, Shape{2, 40000, 0}, Shape{3, 9999, 0},
                  Shape{2, 70001, 1}}) {
    const std::size_t n = static_cast<std::size_t>(s.rows) * static_cast<std::size_t>(s.cols);
    auto values = kjit::test::random_floats(n, static_cast<unsigned>(n + s.offset), 0.5f, 4.0f);
    std::vector<T> host;
    for (float v : values) host.push_back(from_double<T>(v + shift));
    OffsetBuffer<T> x(n, s.offset), y(n, s.offset);
    x.upload(host);
    y.poison();
    k.softmax(x.data(), y.data(), s.rows, s.cols, nullptr);
    std::vector<double> want(n);
    for (int r = 0; r < s.rows; ++r) {
      const std::size_t base = static_cast<std::size_t>(r) * static_cast<std::size_t>(s.cols);
      double m = -INFINITY, sum = 0;
      for (int c = 0; c < s.cols; ++c) m = std::max(m, to_double(host[base + static_cast<std::size_t>(c)]));
      for (int c = 0; c < s.cols; ++c) sum += std::exp(to_double(host[base + static_cast<std::size_t>(c)]) - m);
      for (int c = 0; c < s.cols; ++c) {
        want[base + static_cast<std::size_t>(c)] = std::exp(to_double(host[base + static_cast<std::size_t>(c)]) - m) / sum;
      }
    }
    check_close(y.download(), want, tolerance<T>(), 1e-7,
                fmt::format("softmax<{}> {}x{} offset={} shift={} kernel {}", type_label<T>(), s.rows, s.cols,
                            s.offset, shift, k.softmax_kernel_name(s.cols, s.offset == 0)));
  }
}

template <class T>
void check_mean() {
  kjit::kernels::Kernels<T> k;
  for (std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{1000}, std::size_t{10000019}}) {
    for (std::size_t offset : {std::size_t{0}, std::size_t{1}}) {
      auto host = random_values<T>(n, static_cast<unsigned>(3 * n + offset), 0.5f, 2.0f);
      double want = 0, mean_abs = 0;
      for (const T& v : host) {
        want += to_double(v);
        mean_abs += std::abs(to_double(v));
      }
      want /= static_cast<double>(n);
      mean_abs /= static_cast<double>(n);
      OffsetBuffer<T> x(n, offset);
      x.upload(host);
      kjit::DeviceBuffer<float> out(1);
      std::vector<float> runs;
      for (int run = 0; run < 4; ++run) {
        out.fill_bytes(0xFF);
        k.mean(x.data(), n, out.data(), nullptr);
        runs.push_back(out.to_host()[0]);
      }
      INFO("mean<", type_label<T>(), "> n=", n, " offset=", offset, " got ", runs[0], " want ", want);
      // The mean of +-[0.5, 2] values is near 0: the error is measured against the mean magnitude.
      CHECK(std::abs(runs[0] - want) <= 1e-6 * mean_abs);
      for (float r : runs) CHECK(std::memcmp(&r, &runs[0], sizeof r) == 0);  // same bits run after run
    }
  }
}

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("kernels: square is exact for float and half and bfloat16 at odd sizes and offsets") {
    KJIT_REQUIRE_GPU();
    check_elementwise<float>("square", square_ref, 0.0, &kjit::kernels::Kernels<float>::square);
    check_elementwise<half>("square", square_ref, 0.0, &kjit::kernels::Kernels<half>::square);
    check_elementwise<bfloat16>("square", square_ref, 0.0, &kjit::kernels::Kernels<bfloat16>::square);
  }

  TEST_CASE("kernels: gelu matches the double tanh form for float and half and bfloat16") {
    KJIT_REQUIRE_GPU();
    check_elementwise<float>("gelu", gelu_ref, 1e-5, &kjit::kernels::Kernels<float>::gelu);
    check_elementwise<half>("gelu", gelu_ref, 1e-3, &kjit::kernels::Kernels<half>::gelu);
    check_elementwise<bfloat16>("gelu", gelu_ref, 8e-3, &kjit::kernels::Kernels<bfloat16>::gelu);
  }

  TEST_CASE("kernels: softmax matches the double reference for every row length and type") {
    KJIT_REQUIRE_GPU();
    check_softmax<float>(0.0f);
    check_softmax<half>(0.0f);
    check_softmax<bfloat16>(0.0f);
  }

  TEST_CASE("kernels: softmax is numerically safe for inputs near 1000") {
    KJIT_REQUIRE_GPU();
    check_softmax<float>(1000.0f);  // exp(1000) overflows float: only max-subtraction survives
  }

  TEST_CASE("kernels: mean matches the double reference and gives the same bits run after run") {
    KJIT_REQUIRE_GPU();
    check_mean<float>();
    check_mean<half>();
    check_mean<bfloat16>();
  }

  TEST_CASE("kernels: the naive 16x16 square matches the fast one") {
    KJIT_REQUIRE_GPU();
    kjit::kernels::Kernels<float> k;
    const int w = 1000, h = 37;
    auto host = kjit::test::random_floats(static_cast<std::size_t>(w * h), 11);
    kjit::DeviceBuffer<float> x{std::span<const float>(host)}, y(host.size());
    y.fill_bytes(0xFF);
    k.square_naive(x.data(), y.data(), w, h);
    std::vector<double> want;
    for (float v : host) want.push_back(static_cast<double>(v * v));
    check_close(y.to_host(), want, 0.0, 0.0, "square_matrix_naive 1000x37");
  }

  TEST_CASE("kernels: a second Kernels object on one Runtime loads nothing again") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    kjit::kernels::Kernels<float> first(kjit::Device::current(), rt);
    const kjit::RuntimeStats before = rt.stats();
    kjit::kernels::Kernels<float> second(kjit::Device::current(), rt);
    const kjit::RuntimeStats after = rt.stats();
    // Four kernel files, each found in the Runtime's registry: no disk read, no compile.
    CHECK(after.registry_hits == before.registry_hits + 4);
    CHECK(after.disk_hits == before.disk_hits);
    CHECK(after.misses == before.misses);
    CHECK(after.compiles == before.compiles);
    // And the second object works.
    auto host = kjit::test::random_floats(1000, 5);
    kjit::DeviceBuffer<float> x{std::span<const float>(host)}, y(host.size());
    y.fill_bytes(0xFF);
    second.square(x.data(), y.data(), host.size());
    std::vector<double> want;
    for (float v : host) want.push_back(static_cast<double>(v * v));
    check_close(y.to_host(), want, 0.0, 0.0, "square through the second Kernels<float>");
  }

  TEST_CASE("bench: runs the work for every sample and orders its statistics") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    auto m = rt.load(kjit::Program("count.cu", R"(extern "C" __global__ void count(unsigned long long* c) {
      if (threadIdx.x == 0) atomicAdd(c, 1ull); })"));
    auto count = m.kernel<void(unsigned long long*)>("count");
    for (bool graph : {false, true}) {
      kjit::DeviceBuffer<unsigned long long> counter(1);
      counter.fill_bytes(0);
      kjit::BenchOptions o;
      o.warmup_ms = 2;
      o.repeat_ms = 10;
      o.cuda_graph = graph;
      o.graph_calls = graph ? 20 : 0;
      o.quantiles = {0.1, 0.5, 0.9};
      auto r = kjit::bench([&](CUstream_st* s) { count.launch({.grid = 1, .block = 32, .stream = s}, counter.data()); },
                           o);
      INFO("graph=", graph, " reps=", r.repetitions, " calls=", r.calls_per_sample);
      CHECK(r.repetitions >= o.min_repetitions);
      CHECK(r.samples_ms.size() == static_cast<std::size_t>(r.repetitions));
      CHECK(r.calls_per_sample == (graph ? 20 : 1));
      CHECK(r.min_ms > 0);
      CHECK(r.min_ms <= r.quantile_ms[0]);
      CHECK(r.quantile_ms[0] <= r.median_ms);
      CHECK(r.quantile_ms[1] == doctest::Approx(r.median_ms));
      CHECK(r.median_ms <= r.quantile_ms[2]);
      CHECK(r.quantile_ms[2] <= r.max_ms);
      CHECK(r.min_ms <= r.mean_ms);
      CHECK(r.mean_ms <= r.max_ms);
      // First call + 5 for the estimate + warm-up + every timed call.
      const auto launched = counter.to_host()[0];
      CHECK(launched >= 6ull + static_cast<unsigned long long>(r.repetitions) * static_cast<unsigned>(r.calls_per_sample));
    }
  }
}
