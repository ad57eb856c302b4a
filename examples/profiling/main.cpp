// The lecture's profiling walk-through, with kjit: compile a kernel (through the cache), time
// it with kjit::bench the way the lecture teaches (warm-up, CUDA events, median), see where a
// run's GPU time goes with kjit::Profiler (the key_averages()-style table and a Chrome trace),
// see why with Nsight Compute's speed-of-light figures read in process (the Profiler's "sol"
// metrics, next to the bandwidth kjit::bench measured), dump its PTX, and print the exact
// Nsight Compute command line that profiles it.
//
//   profiling [--rows 4096] [--cols 4096] [--dump-dir kjit_profiling] [--once]
//
// --once launches the kernel once and exits: what the printed ncu command runs.
// Without a GPU it compiles softmax.cu for sm_90, writes its PTX, says why the rest was skipped
// and exits 0, as the other examples do.
#include <kjit/bench.hpp>
#include <kjit/tools/inspect.hpp>
#include <kjit/kernels.hpp>
#include <kjit/kjit.hpp>
#include <kjit/loader.hpp>
#include <kjit/tools/profile.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  int rows = 4096, cols = 4096;
  bool once = false;
  std::filesystem::path dump_dir = "kjit_profiling";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--once") {
      once = true;
    } else if ((a == "--rows" || a == "--cols" || a == "--dump-dir") && i + 1 < argc) {
      std::string v = argv[++i];
      if (a == "--dump-dir") dump_dir = v; else (a == "--rows" ? rows : cols) = std::atoi(v.c_str());
    } else {
      std::fprintf(stderr, "usage: %s [--rows N] [--cols N] [--dump-dir DIR] [--once]\n", argv[0]);
      return 2;
    }
  }
  if (rows < 1 || cols < 1) {
    std::fprintf(stderr, "profiling: --rows and --cols must be at least 1\n");
    return 2;
  }
  try {
    if (!kjit::driver_available() || kjit::device_count() == 0) {
      // Timing and profiling need a GPU; compiling does not: build softmax.cu for sm_90, write
      // its PTX, say why the rest was skipped, and succeed as the other examples do.
      const std::string why = kjit::driver_available() ? "no CUDA device" : kjit::driver_unavailable_reason();
      kjit::KernelLoader loader;
      const kjit::CompileResult compiled = loader.compile("softmax.cu", "", kjit::Arch::sm(90));
      std::filesystem::create_directories(dump_dir);
      const auto ptx_path = dump_dir / "softmax.ptx";
      std::ofstream(ptx_path) << compiled.ptx;
      std::printf("1. softmax.cu: %s for %s (key %s); its PTX is in %s\n",
                  std::string(kjit::to_string(compiled.outcome)).c_str(), compiled.arch.str().c_str(),
                  compiled.key.c_str(), ptx_path.string().c_str());
      std::printf("no GPU (%s): timing, profiling and Nsight Compute (steps 2, 3 and 5) need one; skipped\n",
                  why.c_str());
      return 0;
    }
    // 1. Compile (or take from the disk cache) and load the shipped softmax kernels.
    auto start = std::chrono::steady_clock::now();
    kjit::KernelLoader loader;
    kjit::Module module = loader.load("softmax.cu");
    kjit::kernels::Kernels<float> kernels;
    const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    const kjit::CompileResult& compiled = module.compile_result();
    const std::string name = kernels.softmax_kernel_name(cols, true);
    std::printf("1. softmax.cu: %s (key %s, %s) and loaded in %.1f ms; for a %dx%d softmax the hand-picked shape is %s "
                "(the first call times it against the others: KJIT_PRINT_TUNING=1 shows how)\n",
                std::string(kjit::to_string(compiled.outcome)).c_str(), compiled.key.c_str(),
                compiled.arch.str().c_str(), load_ms, rows, cols, name.c_str());

    // Random inputs, never zero.
    const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
    std::vector<float> host(n);
    std::mt19937 gen(7);
    std::uniform_real_distribution<float> dist(0.5f, 2.0f);
    for (auto& v : host) v = gen() & 1 ? dist(gen) : -dist(gen);
    kjit::DeviceBuffer<float> x{std::span<const float>(host)}, y(n);
    if (once) {
      kernels.softmax(x.data(), y.data(), rows, cols);
      kjit::Device::current().synchronize();
      std::printf("launched %s once\n", name.c_str());
      return 0;
    }

    // 2. Time it: warm-up, then CUDA events around each repetition, L2 flushed, median.
    kjit::BenchOptions options;
    options.quantiles = {0.2, 0.8};
    auto r = kjit::bench([&](CUstream_st* s) { kernels.softmax(x.data(), y.data(), rows, cols, s); }, options);
    const double gb = 2.0 * static_cast<double>(n * sizeof(float)) / 1e9;
    std::printf("2. kjit::bench over %d repetitions: median %.1f us (min %.1f, 20%% %.1f, 80%% %.1f) = %.0f GB/s "
                "read + written\n", r.repetitions, r.median_ms * 1e3, r.min_ms * 1e3, r.quantile_ms[0] * 1e3,
                r.quantile_ms[1] * 1e3, gb / (r.median_ms * 1e-3));

    // 3. Where a run's time goes: every kernel on the GPU (also the others'), the launch calls,
    // kjit's phases and a range of our own, as a table and a Chrome trace.
    std::filesystem::create_directories(dump_dir);
    {
      kjit::Profiler profiler;
      {
        auto step = kjit::Profiler::range("ten softmax steps");
        for (int i = 0; i < 10; ++i) kernels.softmax(x.data(), y.data(), rows, cols);
        auto copy_back = y.to_host();  // a device-to-host copy shows in the table too
      }
      kjit::Device::current().synchronize();
      profiler.stop();
      std::printf("3. kjit::Profiler over ten softmax steps:\n%s", profiler.table({.sort_by = "gpu_total", .limit = 10}).c_str());
      if (profiler.active()) {
        const auto trace = dump_dir / "trace.json";
        profiler.export_chrome_trace(trace);
        std::printf("   its Chrome trace is in %s (open it in https://ui.perfetto.dev)\n", trace.string().c_str());
      }
    }

    // 3b. Why: Nsight Compute's speed-of-light figures for softmax and mean, read in process from
    // the GPU's counters (each measured launch is serialized and replayed once per pass), next
    // to the bandwidth kjit::bench measures for each.
    {
      kjit::DeviceBuffer<float> mean_out(1);
      kernels.mean(x.data(), n, mean_out.data());  // its first call picks its shape
      auto rm = kjit::bench([&](CUstream_st* s) { kernels.mean(x.data(), n, mean_out.data(), s); }, options);
      kjit::Profiler sol({.metrics = {"sol"}});
      kernels.softmax(x.data(), y.data(), rows, cols);
      kernels.mean(x.data(), n, mean_out.data());
      kjit::Device::current().synchronize();
      sol.stop();
      std::printf("3b. speed of light (kjit::bench: softmax %.0f GB/s read + written, mean %.0f GB/s read):\n%s",
                  gb / (r.median_ms * 1e-3), gb / 2 / (rm.median_ms * 1e-3), sol.table({.phases = false}).c_str());
    }

    // 4. Its PTX, alone, in a file.
    const std::string mangled = compiled.lowered_name(name).value_or(name);
    const auto ptx_path = dump_dir / "softmax.ptx";
    std::ofstream(ptx_path) << kjit::inspect::function_ptx(compiled.ptx, mangled);
    std::printf("4. its PTX is in %s (all of softmax.cu's kernels: `kjit compile --arch %s -o DIR "
                "kernels_src/softmax.cu`, or KJIT_DUMP_DIR=DIR)\n", ptx_path.string().c_str(), compiled.arch.str().c_str());

    // 5. Profile one launch with Nsight Compute.
    std::printf("5. profile one launch with Nsight Compute (kjit marks each launch with an NVTX range in "
                "domain \"kjit\"):\n   ncu --nvtx --kernel-name regex:softmax --launch-count 1 --set full "
                "-o softmax_report %s --rows %d --cols %d --once\n",
                std::filesystem::absolute(argv[0]).string().c_str(), rows, cols);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "profiling: %s\n", e.what());
    return 1;
  }
  return 0;
}
