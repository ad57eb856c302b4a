// bench_disk_hit: a disk-cache hit in a fresh process, from request to a launchable kernel,
// against the raw floor (read the cubin file + cuModuleLoadData + cuModuleGetFunction) of the
// same cubin, each in its own fresh process, alternating, after CUDA init. Needs a GPU.
//   bench_disk_hit [processes]          parent: prepares, runs children, prints medians
#include <kjit/kjit.hpp>

#include "bench_util.hpp"
#include "runtime/driver_api.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

using kjit::bench_util::now_us;

namespace {

const char* k_source = R"(
extern "C" __global__ void square(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * x[i];
}
extern "C" __global__ void gelu(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { float v = x[i]; y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v))); }
}
)";

int child(const std::string& mode, const std::string& cache_dir, const std::string& cubin_path) {
  kjit::Device::get(0).make_current();  // CUDA init is not part of either measurement
  const auto& api = kjit::runtime::driver();
  double t0 = now_us(), t1 = 0;
  if (mode == "raw") {
    std::ifstream in(cubin_path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string cubin = ss.str();
    CUmodule m;
    kjit::runtime::check(api.cuModuleLoadData(&m, cubin.data()), "cuModuleLoadData", "bench");
    CUfunction f;
    kjit::runtime::check(api.cuModuleGetFunction(&f, m, "square"), "cuModuleGetFunction", "bench");
    t1 = now_us();
  } else {
    kjit::RuntimeConfig c;
    c.cache_dir = cache_dir;
    kjit::Runtime rt(c);
    auto m = rt.load(kjit::Program("disk_hit.cu", k_source));
    auto k = m.kernel<void(const float*, float*, int)>("square");
    t1 = now_us();
    if (m.compile_result().outcome != kjit::Outcome::hit) {
      std::fprintf(stderr, "expected a disk hit, got %s\n", std::string(kjit::to_string(m.compile_result().outcome)).c_str());
      return 3;
    }
  }
  std::printf("%.3f %.3f\n", t1 - t0, kjit::runtime::prefault_microseconds());
  return 0;
}

// The child's request time; `prefault` gets libkjit's load-time prefault of that process.
double run_child(const char* self, const std::string& mode, const std::string& dir, const std::string& cubin,
                 double* prefault = nullptr) {
  std::string cmd = std::string(self) + " --child " + mode + " " + dir + " " + cubin;
  FILE* p = popen(cmd.c_str(), "r");
  double v = -1, pf = 0;
  if (!p || std::fscanf(p, "%lf %lf", &v, &pf) != 2) v = -1;
  if (p) pclose(p);
  if (prefault) *prefault = pf;
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[1]) == "--child") return child(argv[2], argv[3], argv[4]);
  int processes = argc > 1 ? std::atoi(argv[1]) : 15;
  if (kjit::device_count() == 0) {
    std::printf("bench_disk_hit: no CUDA device (%s); nothing measured\n", kjit::driver_unavailable_reason().c_str());
    return 0;
  }
  auto dir = std::filesystem::temp_directory_path() / ("kjit-bench-hit-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  kjit::RuntimeConfig c;
  c.cache_dir = dir / "cache";
  std::string cubin_path = (dir / "disk_hit.cubin").string();
  {
    kjit::Runtime rt(c);
    auto r = rt.compile(kjit::Program("disk_hit.cu", k_source), {});
    std::ofstream(cubin_path, std::ios::binary) << r.cubin;
    std::printf("bench_disk_hit on %s: cubin %zu bytes, entry in %s\n", kjit::Device::get(0).name().c_str(),
                r.cubin.size(), c.cache_dir.c_str());
  }
  std::vector<double> raw, hit, hit_with_prefault, prefaults;
  for (int i = 0; i < processes; ++i) {
    double pf = 0;
    raw.push_back(run_child(argv[0], "raw", c.cache_dir.string(), cubin_path));
    hit.push_back(run_child(argv[0], "kjit", c.cache_dir.string(), cubin_path, &pf));
    prefaults.push_back(pf);
    hit_with_prefault.push_back(hit.back() + pf);
    if (raw.back() < 0 || hit.back() < 0) {
      std::fprintf(stderr, "a child failed\n");
      return 2;
    }
  }
  std::printf("\nmedians of %d fresh processes each\n", processes);
  kjit::bench_util::row("disk hit -> launchable kernel, us", kjit::bench_util::median(hit),
                        kjit::bench_util::median(raw), "us", "<= 1.5 x read + cuModuleLoadData");
  kjit::bench_util::row("same + libkjit's load-time code prefault, us", kjit::bench_util::median(hit_with_prefault),
                        kjit::bench_util::median(raw), "us", "reported");
  std::printf("libkjit load-time prefault (once per process, before main): median %.1f us\n",
              kjit::bench_util::median(prefaults));
  std::filesystem::remove_all(dir);
  return 0;
}
