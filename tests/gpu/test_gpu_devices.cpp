// Every GPU: a compiled result is loaded once (context-independent loading) and serves each
// device; the same kernel handle launches on the device of its stream. Two threads launch it on
// two devices at once, results checked (random inputs, poisoned outputs). Needs two devices;
// with one, the single-device parts run and the rest is skipped.
#include "gpu/gpu_support.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <latch>
#include <thread>
#include <vector>

namespace {

const char* k_source = R"(
extern "C" __global__ void affine(const float* x, float* y, float a, float b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + b;
}
)";

using Affine = void(const float*, float*, float, float, int);

// Runs `k` `rounds` times on a stream of `device` from the calling thread; the number of wrong elements.
int run_on(const kjit::Kernel<Affine>& k, int device, unsigned seed, int rounds) {
  kjit::Device dev = kjit::Device::get(device);
  kjit::Stream stream(dev);
  const int n = 40009;
  auto host = kjit::test::random_floats(n, seed);
  kjit::DeviceBuffer<float> x(std::span<const float>(host), dev), y(n, dev);
  int wrong = 0;
  for (int r = 0; r < rounds; ++r) {
    y.fill_bytes(0xFF);  // NaN: an element left unwritten fails
    const float a = 1.0f + float((seed + r) % 5) / 4.0f, b = float(device + 1) + float(r % 3) / 2.0f;
    k.launch({.grid = kjit::ceil_div(n, 256), .block = 256, .stream = stream.handle()}, x.data(), y.data(), a, b, n);
    stream.synchronize();
    auto out = y.to_host();
    for (int i = 0; i < n; ++i) wrong += !(std::fabs(out[i] - (a * host[i] + b)) <= 1e-5f * (1 + std::fabs(out[i])));
  }
  return wrong;
}

}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("devices: one load serves every device and a kernel runs on its stream's device") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    const kjit::Program program("affine.cu", k_source);
    kjit::Module m0 = rt.load(program, {}, kjit::Device::get(0));
    auto k = m0.kernel<Affine>("affine");
    CHECK(run_on(k, 0, 41, 3) == 0);
    if (kjit::device_count() < 2) {
      std::printf("[kjit-skip] one CUDA device: the two-device part needs two\n");
      return;
    }
    // The registry keeps one load per compiled result: device 1's module shares device 0's.
    kjit::Module m1 = rt.load(program, {}, kjit::Device::get(1));
    CHECK(m1.device().ordinal() == 1);
    const bool same_arch = kjit::Device::get(0).compute_capability() == kjit::Device::get(1).compute_capability();
    CHECK(m1.shares_code_with(m0) == same_arch);  // a cubin serves the devices of its arch

    // Two threads, one handle (from device 0's module), each on its own device's stream, at once.
    std::latch start(2);
    int wrong[2] = {-1, -1};
    std::vector<std::thread> threads;
    for (int d = 0; d < 2; ++d) {
      threads.emplace_back([&, d] {
        start.arrive_and_wait();
        wrong[d] = run_on(k, d, 50 + d, 20);
      });
    }
    for (auto& t : threads) t.join();
    CHECK(wrong[0] == 0);
    CHECK(wrong[1] == 0);

    // Device 1's module's own handle, from a new thread.
    int fresh_wrong = -1;
    std::thread([&] { fresh_wrong = run_on(m1.kernel<Affine>("affine"), 1, 60, 2); }).join();
    CHECK(fresh_wrong == 0);
  }
}
