// Every GPU: a compiled result is loaded once (context-independent loading) and serves each
// device; the same kernel handle launches on the device of its stream. Two threads launch it on
// two devices at once, results checked (random inputs, poisoned outputs). Needs two devices;
// with one, the single-device parts run and the rest is skipped.
#include "gpu/gpu_support.hpp"
#include "core/driver/driver_api.hpp"
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

CUcontext current_context() {
  CUcontext c = nullptr;
  kjit::driver::get().cuCtxGetCurrent(&c);
  return c;
}

// Checks y == a * x + b on the host; the number of wrong elements.
int wrong_elements(const kjit::DeviceBuffer<float>& y, const std::vector<float>& x, float a, float b) {
  auto out = y.to_host();
  int wrong = 0;
  for (std::size_t i = 0; i < x.size(); ++i) wrong += !(std::fabs(out[i] - (a * x[i] + b)) <= 1e-5f * (1 + std::fabs(out[i])));
  return wrong;
}

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

TEST_SUITE("devices") {
  TEST_CASE("devices: one load serves every device and a kernel runs on its stream's device") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    const kjit::Program program("affine.cu", k_source);
    kjit::Module m0 = rt.load(program, {}, kjit::Device::get(0));
    auto k = m0.kernel<Affine>("affine");
    CHECK(run_on(k, 0, 41, 3) == 0);
    if (kjit::device_count() < 2) KJIT_SKIP("one CUDA device: the two-device part needs two");
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

  TEST_CASE("devices: a launch runs on its stream's device whatever context is current, and restores it") {
    KJIT_REQUIRE_GPU();
    if (kjit::device_count() < 2) KJIT_SKIP("one CUDA device: this test needs two");
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    auto k = rt.load(kjit::Program("affine.cu", k_source), {}, kjit::Device::get(0)).kernel<Affine>("affine");
    const int n = 30011;
    auto host = kjit::test::random_floats(n, 77);
    kjit::Device d0 = kjit::Device::get(0), d1 = kjit::Device::get(1);
    kjit::DeviceBuffer<float> x1(std::span<const float>(host), d1), y1(n, d1);
    kjit::Stream s1(d1);
    const CUcontext c0 = d0.context(), c1 = d1.context();
    for (int round = 0; round < 4; ++round) {
      // Device 0 current (as torch leaves it), a stream of device 1: runs there, device 0 stays current.
      d0.make_current();
      y1.fill_bytes(0xFF);
      const float a = 1.5f + float(round), b = -0.25f * float(round);
      k.launch({.grid = kjit::ceil_div(n, 256), .block = 256, .stream = s1}, x1.data(), y1.data(), a, b, n);
      CHECK(current_context() == c0);
      s1.synchronize();
      CHECK(wrong_elements(y1, host, a, b) == 0);
      CHECK(current_context() == c0);  // DeviceBuffer's copies restore it too

      // The default stream with LaunchConfig::device = 1 while device 0 is current.
      y1.fill_bytes(0xFF);
      k.launch({.grid = kjit::ceil_div(n, 256), .block = 256, .device = 1}, x1.data(), y1.data(), a, b + 1, n);
      CHECK(current_context() == c0);
      d1.synchronize();
      CHECK(current_context() == c0);
      CHECK(wrong_elements(y1, host, a, b + 1) == 0);

      // Nothing current: the launch leaves nothing current (torch's CUDAGuard); kjit's other calls
      // leave the device's context current there, as the CUDA runtime's first call does.
      kjit::driver::get().cuCtxSetCurrent(nullptr);
      k.launch({.grid = kjit::ceil_div(n, 256), .block = 256, .stream = s1}, x1.data(), y1.data(), a, b, n);
      CHECK(current_context() == nullptr);
      s1.synchronize();
      CHECK(wrong_elements(y1, host, a, b) == 0);
      CHECK(current_context() == c1);  // to_host's copy left device 1 current: there was none
      d0.make_current();
      y1.fill_bytes(0xFF);
      k.launch({.grid = kjit::ceil_div(n, 256), .block = 256, .stream = s1}, x1.data(), y1.data(), a, b, n);
      CHECK(current_context() == c0);
      s1.synchronize();
      CHECK(wrong_elements(y1, host, a, b) == 0);

      // Device 1 current and a launch on device 0's default stream via a module of device 1.
      d1.make_current();
      kjit::DeviceBuffer<float> x0(std::span<const float>(host), d0), y0(n, d0);
      y0.fill_bytes(0xFF);
      k.launch({.grid = kjit::ceil_div(n, 256), .block = 256, .device = 0}, x0.data(), y0.data(), a, b, n);
      CHECK(current_context() == c1);
      d0.synchronize();
      CHECK(wrong_elements(y0, host, a, b) == 0);
    }
    // A stream of device 1 for arguments said to be on device 0: an ArgumentError naming both.
    try {
      k.launch({.grid = 1, .block = 32, .stream = s1, .device = 0}, x1.data(), y1.data(), 1.0f, 0.0f, 1);
      FAIL("no error");
    } catch (const kjit::ArgumentError& e) {
      CHECK(std::string(e.what()).find("cuda:1") != std::string::npos);
      CHECK(std::string(e.what()).find("cuda:0") != std::string::npos);
    }
    CHECK(current_context() == c1);
  }
}
