// bench_devices: one compiled result loaded on two devices, a kernel looked up on each, kjit
// (one cuLibraryLoadData shared by both devices' modules: Module, then Module::on) against the
// raw per-context way (cuModuleLoadData + cuModuleGetFunction in each device's context), in one
// process, alternating; CUDA init and the compile are before both timers. Needs two devices.
//   bench_devices [runs]
#include <kjit/tools.hpp>

#include "bench_util.hpp"
#include "core/driver/driver_api.hpp"
#include "core/driver/module_access.hpp"

#include <cstdio>
#include <cstdlib>
#include <vector>

using kjit::bench_util::median;
using kjit::bench_util::now_us;

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 21;
  if (kjit::device_count() < 2) {
    std::printf("bench_devices: needs two CUDA devices, found %d; nothing measured\n", kjit::device_count());
    return 0;
  }
  const kjit::Device d0 = kjit::Device::get(0), d1 = kjit::Device::get(1);
  kjit::RuntimeConfig config;
  config.cache_disabled = true;
  kjit::Runtime rt(config);
  const kjit::CompileResult result = rt.compile(
      kjit::Program("two.cu", "extern \"C\" __global__ void k(float* x, int n) { int i = threadIdx.x; if (i < n) "
                              "x[i] = 2.0f * x[i]; }\n"),
      {.arch = rt.resolve(kjit::Arch::native(), d0)});
  const auto& api = kjit::driver::get();
  std::vector<double> kjit_us, raw_us;
  for (int r = 0; r < runs; ++r) {
    {
      double t0 = now_us();
      kjit::Module m0 = kjit::driver::ModuleAccess::load(result, d0);
      kjit::Module m1 = m0.on(d1);
      auto k0 = m0.kernel_handle("k");
      auto k1 = m1.kernel_handle("k");
      double t1 = now_us();
      kjit_us.push_back(t1 - t0);
    }
    {
      double t0 = now_us();
      CUmodule m[2];
      CUfunction f[2];
      for (int d = 0; d < 2; ++d) {
        kjit::Device::get(d).make_current();
        kjit::driver::check(api.cuModuleLoadData(&m[d], result.cubin.data()), "cuModuleLoadData", "bench");
        kjit::driver::check(api.cuModuleGetFunction(&f[d], m[d], "k"), "cuModuleGetFunction", "bench");
      }
      double t1 = now_us();
      raw_us.push_back(t1 - t0);
      for (int d = 0; d < 2; ++d) api.cuModuleUnload(m[d]);
    }
  }
  std::printf("bench_devices: %d runs, %s x2, medians\n", runs, d0.name().c_str());
  kjit::bench_util::row("load on 2 devices + lookup (raw: 2 modules)", median(kjit_us), median(raw_us), "us",
                        "report");
  return 0;
}
