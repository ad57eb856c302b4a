// bench_profile: what kjit::Profiler costs, in one run on one GPU.
//   1. per launch: N launches of an empty kernel (grid 1, block 32) through kjit's typed launch,
//      then one synchronize, divided by N (the method of ../shared/peers/cupti_floor.cu), in
//      rounds alternating three modes: unprofiled; a bare CUPTI kernel-activity subscriber (the
//      floor: CONCURRENT_KERNEL records into buffers that are only counted); kjit::Profiler.
//   2. the table over one profiled round's N launches (Profiler::table) and the Chrome trace
//      (time and size).
//   3. GPU time in the table against kjit::bench: the square kernel over 16M floats, mean of the
//      profiler's 50 launches against kjit::bench's median (no L2 flush, as the launches run).
//   4. torch.profiler, when python3 with PyTorch runs bench/profile/torch_profile.py: its
//      unprofiled and profiled per-launch cost, its table time and trace size.
// Usage: bench_profile [launches=10000] [rounds=7] [torch_profile.py path]
#include <kjit/bench.hpp>
#include <kjit/kernels.hpp>
#include <kjit/tools.hpp>
#include <kjit/tools/profile.hpp>

#include "bench_util.hpp"
#include "tools/profile/cupti_library.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using kjit::bench_util::median;
using kjit::bench_util::now_us;

namespace {

std::size_t g_floor_records = 0;

void CUPTIAPI floor_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 8 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI floor_buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  const kjit::profile::CuptiApi* api = kjit::profile::cupti(nullptr);
  CUpti_Activity* record = nullptr;
  while (api->next_record(buffer, valid, &record) == CUPTI_SUCCESS) ++g_floor_records;
  std::free(buffer);
}

const char* k_source = R"(
extern "C" __global__ void empty_kernel(float* p) { if (p) p[threadIdx.x] = 0; }
)";

}  // namespace

int main(int argc, char** argv) {
  const int launches = argc > 1 ? std::atoi(argv[1]) : 10000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 7;
  const std::string torch_script = argc > 3 ? argv[3] : std::string(KJIT_SOURCE_DIR) + "/bench/profile/torch_profile.py";
  std::string why;
  const kjit::profile::CuptiApi* cupti = kjit::profile::cupti(&why);
  if (cupti == nullptr) {
    std::fprintf(stderr, "bench_profile: %s\n", why.c_str());
    return 2;
  }
  kjit::Device device = kjit::Device::current();
  std::printf("bench_profile on %s, %d launches per round, %d rounds, CUPTI %s\n", device.name().c_str(), launches,
              rounds, cupti->library.c_str());

  kjit::Module module = kjit::Runtime::global().load(kjit::Program("bench_profile_empty.cu", k_source));
  auto empty = module.kernel<void(float*)>("empty_kernel");
  kjit::Device& dev = device;
  auto per_launch_us = [&](int n) {
    dev.synchronize();
    const double t0 = now_us();
    for (int i = 0; i < n; ++i) empty.launch({.grid = 1, .block = 32}, nullptr);
    dev.synchronize();
    return (now_us() - t0) / n;
  };
  per_launch_us(2000);

  std::vector<double> off, floor, profiled, table_ms, trace_ms, trace_mb;
  std::uint64_t profiled_kernels = 0;
  for (int r = 0; r < rounds; ++r) {
    off.push_back(per_launch_us(launches));

    cupti->register_callbacks(floor_buffer_requested, floor_buffer_completed);
    cupti->activity_enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    per_launch_us(200);
    floor.push_back(per_launch_us(launches));
    cupti->activity_disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cupti->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);

    {
      kjit::Profiler p;
      if (!p.active()) {
        std::fprintf(stderr, "bench_profile: the profiler cannot record: %s\n", p.message().c_str());
        return 2;
      }
      profiled.push_back(per_launch_us(launches));
      p.stop();
      double t0 = now_us();
      const std::string table = p.table({.sort_by = "gpu_total", .limit = 20});
      table_ms.push_back((now_us() - t0) / 1e3);
      profiled_kernels = p.summary().kernel_count;
      t0 = now_us();
      const std::string trace = p.chrome_trace();
      trace_ms.push_back((now_us() - t0) / 1e3);
      trace_mb.push_back(static_cast<double>(trace.size()) / 1e6);
      if (r == rounds - 1) std::printf("\nthe last round's table:\n%s\n", table.c_str());
    }
  }
  const double m_off = median(off), m_floor = median(floor), m_prof = median(profiled);
  std::printf("per launch (launch loop + one synchronize) / %d, medians of %d rounds:\n", launches, rounds);
  std::printf("  unprofiled                     %7.3f us\n", m_off);
  std::printf("  bare CUPTI kernel activity     %7.3f us   (+%.3f us; %zu records counted)\n", m_floor, m_floor - m_off,
              g_floor_records);
  std::printf("  kjit::Profiler                 %7.3f us   (+%.3f us; target +2 us at most)\n", m_prof, m_prof - m_off);
  std::printf("  kjit::Profiler over bare CUPTI %+7.3f us   (target 0.5 us at most)\n", m_prof - m_floor);
  std::printf("table over %llu kernels: %.3f ms (target 50 ms at most); Chrome trace %.3f ms, %.2f MB\n",
              static_cast<unsigned long long>(profiled_kernels), median(table_ms), median(trace_ms), median(trace_mb));

  // 3. GPU times in the table against kjit::bench on the same kernel.
  {
    kjit::kernels::Kernels<float> kernels;
    const std::size_t n = std::size_t{1} << 24;
    kjit::DeviceBuffer<float> x(n), y(n);
    x.fill_bytes(0x3F);
    kjit::BenchOptions options;
    options.flush_l2 = false;
    const auto b = kjit::bench([&](CUstream_st* s) { kernels.square(x.data(), y.data(), n, s); }, options);
    options.cuda_graph = true;  // per call from a graph of many: no event around each launch
    const auto g = kjit::bench([&](CUstream_st* s) { kernels.square(x.data(), y.data(), n, s); }, options);
    kjit::Profiler p;
    for (int i = 0; i < 50; ++i) kernels.square(x.data(), y.data(), n);
    dev.synchronize();
    const auto s = p.summary();
    double mean_us = 0;
    for (const auto& row : s.kernels) {
      if (row.name == kernels.square_kernel_name()) mean_us = row.gpu_mean_us;
    }
    std::printf("square over 16M floats: profiler mean %.2f us; kjit::bench median %.2f us (ratio %.3f), with "
                "cuda_graph %.2f us (ratio %.3f)\n", mean_us, b.median_ms * 1e3, mean_us / (b.median_ms * 1e3),
                g.median_ms * 1e3, mean_us / (g.median_ms * 1e3));
  }

  // 4. torch.profiler on the same machine, in its own process.
  const std::string command = "python3 " + torch_script + " " + std::to_string(launches) + " 5 2>/dev/null";
  if (FILE* p = popen(command.c_str(), "r")) {
    char line[4096];
    std::string out;
    while (std::fgets(line, sizeof line, p) != nullptr) out += line;
    const int status = pclose(p);
    if (status == 0 && !out.empty()) {
      std::printf("torch.profiler (same machine, its own process): %s", out.c_str());
    } else {
      std::printf("torch.profiler: not measured (python3 with PyTorch did not run %s)\n", torch_script.c_str());
    }
  }
  return 0;
}
