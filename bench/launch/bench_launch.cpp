// bench_launch: kjit's overhead against the raw NVRTC + driver floor, measured in one run.
//   1. cold load: raw nvrtcCompileProgram + cuModuleLoadData  vs  kjit Runtime::load into an empty cache
//   2. launch: 100,000 raw cuLaunchKernel enqueues  vs  100,000 typed launches (empty kernel; 8 arguments)
//   3. registry: Runtime::load of an already-loaded 4 KB source (a hit in the in-process registry)
//   4. load_inline called again with the same source and options, against that registry lookup
//   5. Global::copy_from of 64 bytes against cuMemcpyHtoD to the same address
// Prints medians and ratios. Needs a GPU.
#include <kjit/tools.hpp>

#include "bench_util.hpp"
#include "core/driver/driver_api.hpp"
#include "core/compile/nvrtc/nvrtc_info.hpp"

#include <nvrtc.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>

using kjit::bench_util::median;
using kjit::bench_util::now_us;

namespace {

std::string kernels_source(int salt) {
  return "// salt " + std::to_string(salt) + R"(
extern "C" __global__ void empty() {}
extern "C" __global__ void eight(float* a, const float* b, int c, int d, float e, float f, long long g, double h) {
  if (c < 0) a[0] = b[0] + d + e + f + (float)g + (float)h;
}
extern "C" __global__ void square(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * x[i];
}
)";
}

void check_nvrtc(nvrtcResult r) {
  if (r != NVRTC_SUCCESS) {
    std::fprintf(stderr, "nvrtc: %s\n", nvrtcGetErrorString(r));
    std::exit(2);
  }
}

// The floor: NVRTC to a cubin for the device, then cuModuleLoadData.
double raw_cold_load_us(const std::string& src, int cc) {
  const auto& api = kjit::driver::get();
  double t0 = now_us();
  nvrtcProgram prog;
  check_nvrtc(nvrtcCreateProgram(&prog, src.c_str(), "bench.cu", 0, nullptr, nullptr));
  std::string arch = "--gpu-architecture=sm_" + std::to_string(cc);
  // --no-cache: the same work as kjit's compile, which turns NVRTC's own cache (12.9+) off.
  std::vector<std::string> args = {arch, "--std=c++17"};
  if (kjit::compile::NvrtcInfo::has_own_cache()) args.push_back("--no-cache");
  for (const auto& d : kjit::compile::NvrtcInfo::toolkit_include_dirs()) args.push_back("--include-path=" + d.string());
  std::vector<const char*> argv;
  for (auto& a : args) argv.push_back(a.c_str());
  check_nvrtc(nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data()));
  size_t n = 0;
  check_nvrtc(nvrtcGetCUBINSize(prog, &n));
  std::string cubin(n, '\0');
  check_nvrtc(nvrtcGetCUBIN(prog, cubin.data()));
  nvrtcDestroyProgram(&prog);
  CUmodule m;
  kjit::driver::check(api.cuModuleLoadData(&m, cubin.data()), "cuModuleLoadData", "bench");
  double t1 = now_us();
  api.cuModuleUnload(m);
  return t1 - t0;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 15;
  if (!kjit::driver_available() || kjit::device_count() == 0) {
    std::printf("bench_launch: no CUDA device (%s); nothing measured\n", kjit::driver_unavailable_reason().c_str());
    return 0;
  }
  const auto& api = kjit::driver::get();
  kjit::Device dev = kjit::Device::get(0);
  dev.make_current();
  int cc = dev.compute_capability();
  std::printf("bench_launch on %s (sm_%d), NVRTC %s, kjit %s\n", dev.name().c_str(), cc, kjit::nvrtc_version().c_str(),
              std::string(kjit::version()).c_str());
  auto tmp = std::filesystem::temp_directory_path() / ("kjit-bench-launch-" + std::to_string(getpid()));

  // 1. Cold load, alternating raw and kjit, each with a source never seen before.
  std::vector<double> raw_cold, kjit_cold;
  raw_cold_load_us(kernels_source(-1), cc);  // warm NVRTC's own first-use costs for both
  for (int r = 0; r < rounds; ++r) {
    raw_cold.push_back(raw_cold_load_us(kernels_source(2 * r), cc));
    kjit::RuntimeConfig c;
    c.cache_dir = tmp / ("cold" + std::to_string(r));
    kjit::Runtime rt(c);
    double t0 = now_us();
    auto m = rt.load(kjit::Program("bench.cu", kernels_source(2 * r + 1)));
    auto k = m.kernel<void()>("empty");
    kjit_cold.push_back(now_us() - t0);
  }

  // 2. Launch enqueue cost.
  kjit::RuntimeConfig c;
  c.cache_dir = tmp / "warm";
  kjit::Runtime rt(c);
  auto m = rt.load(kjit::Program("bench.cu", kernels_source(1000)));
  auto empty = m.kernel<void()>("empty");
  auto eight = m.kernel<void(float*, const float*, int, int, float, float, long long, double)>("eight");
  CUfunction f_empty = empty.handle(), f_eight = eight.handle();
  kjit::Stream stream(dev);
  CUstream s = stream.handle();
  kjit::DeviceBuffer<float> buf(16, dev);
  float* a = buf.data();
  const float* b = buf.data();
  const int n = 100000;
  std::vector<double> raw_empty, kjit_empty, raw_eight, kjit_eight;
  // Raw and typed alternate which goes first, round by round.
  auto time_per_launch = [&](auto&& body) {
    double t0 = now_us();
    for (int i = 0; i < n; ++i) body();
    double t1 = now_us();
    stream.synchronize();
    return (t1 - t0) / n;
  };
  int ci = 1, di = 2;
  float ef = 3, ff = 4;
  long long g = 5;
  double h = 6;
  auto raw_empty_body = [&] { api.cuLaunchKernel(f_empty, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr); };
  auto kjit_empty_body = [&] { empty.launch({.grid = {1}, .block = {32}, .stream = s}); };
  auto raw_eight_body = [&] {
    void* args[] = {&a, &b, &ci, &di, &ef, &ff, &g, &h};
    api.cuLaunchKernel(f_eight, 1, 1, 1, 32, 1, 1, 0, s, args, nullptr);
  };
  auto kjit_eight_body = [&] {
    eight.launch({.grid = {1}, .block = {32}, .stream = s}, a, b, ci, di, ef, ff, g, h);
  };
  time_per_launch(raw_empty_body);  // warm-up
  time_per_launch(kjit_empty_body);
  for (int r = 0; r < rounds; ++r) {
    if (r % 2 == 0) {
      raw_empty.push_back(time_per_launch(raw_empty_body));
      kjit_empty.push_back(time_per_launch(kjit_empty_body));
      raw_eight.push_back(time_per_launch(raw_eight_body));
      kjit_eight.push_back(time_per_launch(kjit_eight_body));
    } else {
      kjit_empty.push_back(time_per_launch(kjit_empty_body));
      raw_empty.push_back(time_per_launch(raw_empty_body));
      kjit_eight.push_back(time_per_launch(kjit_eight_body));
      raw_eight.push_back(time_per_launch(raw_eight_body));
    }
  }

  // 3. Registry lookup of a 4 KB source.
  std::string big = kernels_source(2000);
  while (big.size() < 4096) big += "// padding padding padding padding padding padding padding padding\n";
  kjit::Program big_program("big.cu", big);
  rt.load(big_program);
  std::vector<double> lookups;
  for (int r = 0; r < rounds; ++r) {
    const int reps = 100000;
    double t0 = now_us();
    for (int i = 0; i < reps; ++i) {
      auto mod = rt.load(big_program);
      if (!mod) std::abort();
    }
    lookups.push_back((now_us() - t0) / reps);
  }

  // 4. load_inline called again with the same 4 KB source and options (after the first call),
  //    against the registry lookup above: alternating rounds, each its own loop.
  const kjit::LoadInlineOptions inline_options{.name = "big_inline",
                                               .cuda_sources = big,
                                               .functions = {"empty", "eight", "square"},
                                               .extra_cuda_cflags = {"-O2"},
                                               .build_directory = tmp / "inline"};
  kjit::load_inline(inline_options);
  std::vector<double> inline_calls, inline_lookups;
  for (int r = 0; r < rounds; ++r) {
    const int reps = 100000;
    double t0 = now_us();
    for (int i = 0; i < reps; ++i) {
      auto mod = kjit::load_inline(inline_options);
      if (!mod) std::abort();
    }
    inline_calls.push_back((now_us() - t0) / reps);
    t0 = now_us();
    for (int i = 0; i < reps; ++i) {
      auto mod = rt.load(big_program);
      if (!mod) std::abort();
    }
    inline_lookups.push_back((now_us() - t0) / reps);
  }

  // 5. Module global: Global<float[]>::copy_from of 64 bytes against cuMemcpyHtoD of the same
  //    bytes to the same address, alternating which goes first.
  auto gm = rt.load(kjit::Program("globals.cu", R"(__constant__ float c[16];
extern "C" __global__ void use(float* y) { y[threadIdx.x] = c[threadIdx.x % 16]; })"));
  auto table = gm.global<float[]>("c");
  std::array<float, 16> values{};
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.5f + static_cast<float>(i);
  const CUdeviceptr table_address = table.address();
  std::vector<double> raw_copies, kjit_copies;
  auto time_per_copy = [&](auto&& body) {
    const int copies = 20000;
    double t0 = now_us();
    for (int i = 0; i < copies; ++i) body();
    return (now_us() - t0) / copies;
  };
  auto raw_copy = [&] { api.cuMemcpyHtoD(table_address, values.data(), sizeof values); };
  auto kjit_copy = [&] { table.copy_from(values); };
  for (int r = 0; r < rounds; ++r) {
    if (r % 2 == 0) {
      raw_copies.push_back(time_per_copy(raw_copy));
      kjit_copies.push_back(time_per_copy(kjit_copy));
    } else {
      kjit_copies.push_back(time_per_copy(kjit_copy));
      raw_copies.push_back(time_per_copy(raw_copy));
    }
  }

  std::printf("\nmedians of %d rounds\n", rounds);
  kjit::bench_util::row("cold load (compile + load), us", median(kjit_cold), median(raw_cold), "us", "<= 1.05");
  kjit::bench_util::row("launch enqueue, empty kernel, us", median(kjit_empty), median(raw_empty), "us", "<= 1.05");
  kjit::bench_util::row("launch enqueue, 8 arguments, us", median(kjit_eight), median(raw_eight), "us", "<= 1.05");
  std::printf("%-46s kjit %10.3f us   (target <= 1 us)\n", "registry lookup, 4 KB source", median(lookups));
  std::printf("%-46s kjit %10.3f us   lookup %8.3f us   ratio %6.3f   (target <= 1.5)\n",
              "load_inline again, same 4 KB source + options", median(inline_calls), median(inline_lookups),
              median(inline_calls) / median(inline_lookups));
  kjit::bench_util::row("global copy_from, 64 bytes, us", median(kjit_copies), median(raw_copies), "us", "<= 1.05");
  std::filesystem::remove_all(tmp);
  return 0;
}
