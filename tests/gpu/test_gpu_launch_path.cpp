// The launch path's rule, observed: once a launch's decision is made, Kernel::launch, a Tuner's
// launch (by key, and a spec's by shape, remembered or not) and the shipped kernels' softmax and
// mean allocate nothing and take no lock. A LaunchProbe (tests/support/launch_probes) counts the
// thread's operator new and delete calls and the locks that code of this executable (libkjit's
// objects, linked statically) takes; it is shown to count an allocation and a lock made on
// purpose, a lock inside libkjit's code, and nothing of another thread's. Every launch is
// checked for its result afterwards, so a path that launched nothing cannot pass.
#include "gpu/gpu_support.hpp"
#include "support/launch_probes.hpp"
#include "support/temp_dir.hpp"

#include "core/trace/phase.hpp"

#include <kjit/kernels.hpp>
#include <kjit/tune.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace {

constexpr int k_launches = 1000;

const char* k_source = R"(
template <int MODE>
__global__ void scale(const float* x, float* y, float a, int n) {
  int base = blockIdx.x * blockDim.x;
  if (MODE == 0) {
    int i = base + threadIdx.x;
    if (i < n) y[i] = a * x[i];
  } else if (threadIdx.x == 0) {
    for (int j = 0; j < (int)blockDim.x && base + j < n; ++j) y[base + j] = a * x[base + j];
  }
}
)";

using Scale = void(const float*, float*, float, int);

kjit::TuneOptions quick() {
  kjit::TuneOptions o;
  o.mode = kjit::TuneMode::on;
  o.print = false;
  o.round_ms = 1;
  o.rounds = 1;
  return o;
}

std::vector<kjit::TuneCandidate> candidates() {
  return {{.kernel = "scale<1>", .block = 128}, {.kernel = "scale<0>", .block = 256}};
}

// y == a * x over the first n elements.
void check_scaled(const kjit::DeviceBuffer<float>& y, const std::vector<float>& x, float a, int n) {
  const auto out = y.to_host();
  int bad = 0;
  for (int i = 0; i < n; ++i) bad += out[static_cast<std::size_t>(i)] != a * x[static_cast<std::size_t>(i)];
  CHECK(bad == 0);
}

void check_clean(const kjit::test::Probed& seen, const char* what) {
  INFO(what, ": ", seen.allocations, " allocations, ", seen.deallocations, " deallocations, ", seen.locks,
       " locks in kjit's code (", seen.locks_elsewhere, " in shared libraries, the driver's own)");
  CHECK(seen.allocations == 0);
  CHECK(seen.deallocations == 0);
  CHECK(seen.locks == 0);
}

}  // namespace

TEST_SUITE("launch_path") {
  TEST_CASE("launch_path: the probes count an allocation and a lock made on purpose and only this thread's") {
    CHECK(kjit::test::lock_probe_sees_this_executable());
    std::mutex m;
    {
      kjit::test::LaunchProbe probe;
      auto* p = new std::vector<int>(3);  // two allocations: the vector and its storage
      delete p;
      m.lock();
      m.unlock();
      const auto seen = probe.stop();
      CHECK(seen.allocations == 2);
      CHECK(seen.deallocations == 2);
      CHECK(seen.locks == 1);
    }
    {
      // A lock inside libkjit's code (the kernels known to the profiler, under their mutex).
      kjit::test::LaunchProbe probe;
      const auto known = kjit::trace::known_kernels();
      const auto seen = probe.stop();
      CHECK(seen.locks >= 1);
      CHECK(known.size() < 1000000);
    }
    {
      // Another thread's allocations and locks are its own.
      kjit::test::LaunchProbe probe;
      std::thread other([&] {
        for (int i = 0; i < 100; ++i) {
          std::lock_guard lock(m);
          std::make_unique<int>(i).reset();
        }
      });
      other.join();
      const auto seen = probe.stop();
      CHECK(seen.allocations < 10);  // the thread's start, not its 100
      CHECK(seen.locks == 0);
    }
  }

  TEST_CASE("launch_path: Kernel::launch allocates nothing and takes no lock") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    kjit::Program program("scale.cu", k_source);
    program.instantiate("scale<0>");
    const auto k = rt.load(program).kernel<Scale>("scale<0>");
    const int n = 1 << 16;
    const auto host = kjit::test::random_floats(n, 7);
    kjit::DeviceBuffer<float> x{std::span<const float>(host)}, y(n);
    kjit::Stream stream;
    const kjit::LaunchConfig config{.grid = {kjit::ceil_div(n, 256)}, .block = {256}, .stream = stream};
    k.launch(config, x.data(), y.data(), 1.0f, n);  // the first launch may find what it needs once
    stream.synchronize();
    y.fill_bytes(0xFF);
    kjit::test::LaunchProbe probe;
    for (int i = 0; i < k_launches; ++i) k.launch(config, x.data(), y.data(), 1.5f, n);
    const auto seen = probe.stop();
    stream.synchronize();
    check_clean(seen, "Kernel::launch");
    check_scaled(y, host, 1.5f, n);
  }

  TEST_CASE("launch_path: a decided Tuner::launch by key allocates nothing and takes no lock") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    kjit::Tuner<Scale> tuner(kjit::Program("scale.cu", k_source), candidates(), quick(), rt);
    const int n = 100000;
    const auto host = kjit::test::random_floats(n, 11);
    kjit::DeviceBuffer<float> x{std::span<const float>(host)}, y(n);
    kjit::Stream stream;
    // A grid that captures more than a std::function holds in place: launch() must not copy it into one.
    const int rows = 1, pad = 0;
    const long long unused = 3;
    const auto grid = [&](const kjit::TuneCandidate& c) {
      return kjit::Dim3(kjit::ceil_div(static_cast<std::size_t>(n * rows + pad) + static_cast<std::size_t>(unused - 3),
                                       c.block.x));
    };
    const auto key = [&] { return kjit::TuneKey().add("dtype", "float").add_bucketed("n", n).add("rows", rows); };
    const auto& decided = tuner.launch(key(), grid, stream, {}, x.data(), y.data(), 1.0f, n);
    CHECK(decided.source == kjit::TuneDecision::Source::timed);
    stream.synchronize();
    y.fill_bytes(0xFF);
    const kjit::TuneDecision* last = nullptr;
    kjit::test::LaunchProbe probe;
    for (int i = 0; i < k_launches; ++i) last = &tuner.launch(key(), grid, stream, {}, x.data(), y.data(), 2.5f, n);
    const auto seen = probe.stop();
    stream.synchronize();
    check_clean(seen, "Tuner::launch by key");
    CHECK(last == &decided);
    CHECK(tuner.stats().timed == 1);
    CHECK(tuner.stats().in_memory == k_launches);
    check_scaled(y, host, 2.5f, n);
  }

  TEST_CASE("launch_path: a spec tuner's decided shapes launch without allocating or locking remembered or not") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    kjit::TuneSpec spec;
    spec.name = "scale";
    spec.candidates = candidates();
    spec.key = {"pow2(n)"};
    spec.grid = {"ceil_div(n, block_x)"};
    spec.arguments = {{.name = "x", .type = "const float*", .count = "n"},
                      {.name = "y", .type = "float*", .count = "n"},
                      {.name = "a", .type = "float", .value = "1.5"},
                      {.name = "n", .type = "int", .value = "n"}};
    kjit::Tuner<Scale> tuner(kjit::Program("scale.cu", k_source), spec, quick(), rt);
    const int most = 1 << 17;
    const auto host = kjit::test::random_floats(most, 13);
    kjit::DeviceBuffer<float> x{std::span<const float>(host)}, y(most);
    kjit::Stream stream;
    // Shapes of one bucket (one decision): the first 256 are remembered, the rest keyed each call.
    std::vector<int> sizes;
    for (int i = 0; i < 300; ++i) sizes.push_back(most - i);
    for (int s : sizes) tuner.launch({{"n", s}}, stream, x.data(), y.data(), 1.0f, s);
    CHECK(tuner.stats().timed == 1);
    stream.synchronize();
    for (int s : {sizes.front(), sizes.back()}) {
      INFO("n=", s, s == sizes.front() ? " (remembered)" : " (past the remembered shapes)");
      y.fill_bytes(0xFF);
      kjit::test::LaunchProbe probe;
      for (int i = 0; i < k_launches; ++i) tuner.launch({{"n", s}}, stream, x.data(), y.data(), -0.5f, s);
      const auto seen = probe.stop();
      stream.synchronize();
      check_clean(seen, "Tuner::launch by shape");
      check_scaled(y, host, -0.5f, s);
    }
    CHECK(tuner.stats().timed == 1);
  }

  TEST_CASE("launch_path: the shipped kernels' decided softmax and mean allocate nothing and take no lock") {
    KJIT_REQUIRE_GPU();
    kjit::TuneOptions tuning = quick();
    kjit::kernels::Kernels<float> k(kjit::Device::current(), kjit::Runtime::global(), tuning);
    const int rows = 48, cols = 1000;
    const std::size_t n = static_cast<std::size_t>(rows) * cols;
    const auto host = kjit::test::random_floats(n, 17);
    kjit::DeviceBuffer<float> x{std::span<const float>(host)}, y(n);
    kjit::DeviceBuffer<float> mean(1);
    kjit::Stream stream;
    k.softmax(x.data(), y.data(), rows, cols, stream);  // decides (times) each once
    k.mean(x.data(), n, mean.data(), stream);
    stream.synchronize();
    y.fill_bytes(0xFF);
    mean.fill_bytes(0xFF);
    kjit::test::LaunchProbe probe;
    for (int i = 0; i < k_launches / 2; ++i) {
      k.softmax(x.data(), y.data(), rows, cols, stream);
      k.mean(x.data(), n, mean.data(), stream);
    }
    const auto seen = probe.stop();
    stream.synchronize();
    check_clean(seen, "Kernels<float>::softmax and mean");
    const auto out = y.to_host();
    for (int r = 0; r < rows; r += 7) {
      double max = -1e300, sum = 0, got = 0;
      for (int c = 0; c < cols; ++c) max = std::max(max, static_cast<double>(host[r * cols + c]));
      for (int c = 0; c < cols; ++c) sum += std::exp(static_cast<double>(host[r * cols + c]) - max);
      for (int c = 0; c < cols; ++c) got += out[r * cols + c];
      const double first = std::exp(static_cast<double>(host[r * cols]) - max) / sum;
      CHECK(std::abs(out[r * cols] - first) <= 1e-5 * first + 1e-7);
      CHECK(std::abs(got - 1.0) < 1e-4);
    }
    double want = 0;
    for (float v : host) want += v;
    want /= static_cast<double>(n);
    double magnitude = 0;
    for (float v : host) magnitude += std::abs(v);
    magnitude /= static_cast<double>(n);
    CHECK(std::abs(mean.to_host()[0] - want) <= 1e-5 * magnitude);
  }
}
