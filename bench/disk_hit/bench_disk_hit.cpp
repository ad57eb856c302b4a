// bench_disk_hit: a disk-cache hit in a fresh process, from request to a launchable kernel,
// against the raw floor (read the cubin file + cuModuleLoadData + cuModuleGetFunction) of the
// same cubin, each in its own fresh process, alternating, after CUDA init. A second pair runs
// through the first completed launch: with lazy loading (the default) the driver loads a
// function on first use, which kjit's signature check triggers and the raw path defers to its
// first launch. A third pair runs after a hit of another program in the same process (raw: the
// load of its cubin), so that only each side's own work is left. Needs a GPU.
//   bench_disk_hit [processes]          parent: prepares, runs children, prints medians
#include <kjit/parameters.hpp>
#include <kjit/tools.hpp>

#include "bench_util.hpp"
#include "core/base/nvrtc_library.hpp"
#include "core/cache/store.hpp"
#include "core/cache/store_notes.hpp"
#include "core/request/cache_key.hpp"
#include "core/driver/driver_api.hpp"
#include "core/compile/nvrtc_compiler.hpp"
#include "core/compile/nvrtc/nvrtc_info.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
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

// Another program, for the warm pair: its hit (or its cubin's load) runs before the timer.
const char* k_other_source = R"(
extern "C" __global__ void square(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * x[i] + 1.0f;
}
)";

// POSIX read of a whole file (the raw floor's read); says on stderr what failed.
bool read_posix(const std::string& path, std::string& out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st{};
  bool ok = fd >= 0 && ::fstat(fd, &st) == 0;
  if (ok) {
    out.resize(static_cast<std::size_t>(st.st_size));
    ok = ::read(fd, out.data(), out.size()) == static_cast<ssize_t>(out.size());
  }
  if (!ok) std::fprintf(stderr, "bench_disk_hit: reading %s: %s\n", path.c_str(), std::strerror(errno));
  if (fd >= 0) ::close(fd);
  return ok;
}

int child(const std::string& mode, const std::string& cache_dir, const std::string& cubin_path) {
  kjit::Device::get(0).make_current();  // CUDA init is not part of either measurement
  const auto& api = kjit::driver::get();
  using Sig = void(const float*, float*, int);
  // The warm pair: before the timer, "rawwarm" loads the other program's cubin (the driver's
  // first module load and lookup); "kjitwarm" makes a whole kjit hit of the other program (the
  // same driver work, and kjit's code run once). What is left is each side's own work.
  if (mode == "rawwarm") {
    std::string other;
    if (!read_posix(cubin_path + ".other", other)) return 4;
    CUmodule m;
    CUfunction f;
    kjit::driver::check(api.cuModuleLoadData(&m, other.data()), "cuModuleLoadData", "bench");
    kjit::driver::check(api.cuModuleGetFunction(&f, m, "square"), "cuModuleGetFunction", "bench");
  } else if (mode == "kjitwarm") {
    auto* warm = new kjit::Runtime;  // never destroyed: its module stays loaded, as the raw side's does
    auto k = warm->load(kjit::Program("other.cu", k_other_source)).kernel<Sig>("square");
    (void)k;
    // Its Runtime began NVRTC's preparation: done before the timer, so that the row is kjit's own
    // work (a thread made while the loader opens libnvrtc waits for it: docs/embedding.md).
    kjit::prepare(kjit::Wait::yes);
  }
  double t0 = now_us(), t1 = 0;
  const bool first_launch = mode == "raw1" || mode == "kjit1";  // through the first completed launch
  if (mode == "raw" || mode == "raw1" || mode == "rawposix" || mode == "rawwarm") {
    std::string cubin;
    if (mode == "rawposix" || mode == "rawwarm") {  // the leanest read: open, fstat, read into a buffer
      if (!read_posix(cubin_path, cubin)) return 4;
    } else {  // what most C++ code writes
      std::ifstream in(cubin_path, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      cubin = ss.str();
    }
    CUmodule m;
    kjit::driver::check(api.cuModuleLoadData(&m, cubin.data()), "cuModuleLoadData", "bench");
    CUfunction f;
    kjit::driver::check(api.cuModuleGetFunction(&f, m, "square"), "cuModuleGetFunction", "bench");
    if (first_launch) {
      const float* x = nullptr;
      float* y = nullptr;
      int n = 0;
      void* args[] = {&x, &y, &n};
      kjit::driver::check(api.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr), "cuLaunchKernel", "bench");
      kjit::driver::check(api.cuCtxSynchronize(), "cuCtxSynchronize", "bench");
    }
    t1 = now_us();
  } else if (mode == "parts") {
    // The hit path's steps one by one, each the first of its kind in the process.
    double a = now_us();
    kjit::Device dev = kjit::Device::current();
    double b = now_us();
    kjit::cache::Store store(kjit::cache::StoreConfig{cache_dir, 2ull << 30});  // a string: no std::filesystem
    double c = now_us();
    kjit::cache::StoreNotes notes(store.folder());  // NVRTC's answer, kept there (as a request reads it)
    auto archs = kjit::base::nvrtc_facts(&notes).archs;
    double e = now_us();
    kjit::Program prog("disk_hit.cu", k_source);
    auto flags = kjit::canonical_flags({}, kjit::Arch::sm(dev.compute_capability()));
    double f = now_us();
    auto key = kjit::request::CacheKey::compute(prog, flags, kjit::Arch::sm(dev.compute_capability()), {}, {},
                                                kjit::compile::FastPath::on);
    double g = now_us();
    auto got = store.get(key.key);
    double h = now_us();
    std::string cubin;
    if (got.entry) {
      for (auto& [kind, bytes] : got.entry->sections) {
        if (kind == kjit::cache::SectionKind::cubin) cubin = bytes;
      }
    }
    double i = now_us();
    CUmodule m;
    kjit::driver::check(api.cuModuleLoadData(&m, cubin.data()), "cuModuleLoadData", "bench");
    double j = now_us();
    CUfunction fn;
    kjit::driver::check(api.cuModuleGetFunction(&fn, m, "square"), "cuModuleGetFunction", "bench");
    double k = now_us();
    std::size_t off = 0, size = 0;
    api.cuFuncGetParamInfo(fn, 0, &off, &size);
    double l = now_us();
    api.cuFuncGetParamInfo(fn, 1, &off, &size);
    t1 = now_us();
    // For reference, not on the hit path: a process's first std::filesystem call.
    std::error_code ec;
    bool exists = std::filesystem::exists(std::filesystem::path(cache_dir), ec);
    double fs = now_us() - t1;
    std::fprintf(stderr, "parts device %.1f store %.1f nvrtc-facts %.1f flags %.1f key %.1f get %.1f "
                 "sections %.1f module %.1f getfn %.1f param0 %.1f param1 %.1f | first std::filesystem call %.1f "
                 "(%d %zu %d)\n", b - a, c - b, e - c, f - e, g - f, h - g, i - h, j - i, k - j, l - k, t1 - l, fs,
                 exists, archs.size(), got.entry ? 1 : 0);
  } else if (mode == "detail") {
    // Where a fresh process's hit goes: runtime, key + read, module load, kernel handle.
    kjit::Runtime rt;  // KJIT_CACHE_DIR
    double a = now_us();
    kjit::Device dev = kjit::Device::current();
    double b = now_us();
    auto r = rt.compile(kjit::Program("disk_hit.cu", k_source), {});
    double d = now_us();
    kjit::Module m = rt.load(std::move(r), dev);
    double e = now_us();
    kjit::KernelHandle h = m.kernel_handle("square");  // the lookup: the driver's function, the sizes
    double e2 = now_us();
    const kjit::KernelSignature& s = h.signature();  // the parameter table: PTX, names, types
    double e3 = now_us();
    auto k = m.kernel<void(const float*, float*, int)>("square");  // the typed check against it
    t1 = now_us();
    std::fprintf(stderr, "runtime %.1f device %.1f compile(hit) %.1f module %.1f kernel %.1f (lookup %.1f, signature "
                 "%.1f, typed %.1f; %zu parameters) us\n", a - t0, b - a, d - b, e - d, t1 - e, e2 - e, e3 - e2,
                 t1 - e3, s.size());
  } else {
    // "kjit": the cache dir from KJIT_CACHE_DIR, as deployments set it; "kjitpath": given in
    // RuntimeConfig, which makes the caller build a std::filesystem::path (its first use in the
    // process costs tens of microseconds, in the caller's code).
    std::optional<kjit::Runtime> holder;
    if (mode == "kjitpath") {
      kjit::RuntimeConfig c;
      c.cache_dir = cache_dir;
      holder.emplace(c);
    } else {
      holder.emplace();
    }
    kjit::Runtime& rt = *holder;
    auto m = rt.load(kjit::Program("disk_hit.cu", k_source));
    auto k = m.kernel<void(const float*, float*, int)>("square");
    if (first_launch) {
      k({.grid = {1}, .block = {32}}, nullptr, nullptr, 0);
      kjit::driver::check(api.cuCtxSynchronize(), "cuCtxSynchronize", "bench");
    }
    t1 = now_us();
    if (m.compile_result().outcome != kjit::Outcome::hit) {
      std::fprintf(stderr, "expected a disk hit, got %s\n", std::string(kjit::to_string(m.compile_result().outcome)).c_str());
      return 3;
    }
  }
  std::printf("%.3f\n", t1 - t0);
  return 0;
}

// The child's request time.
double run_child(const char* self, const std::string& mode, const std::string& dir, const std::string& cubin) {
  std::string cmd = std::string(self) + " --child " + mode + " " + dir + " " + cubin;
  FILE* p = popen(cmd.c_str(), "r");
  double v = -1;
  if (!p || std::fscanf(p, "%lf", &v) != 1) v = -1;
  if (p) pclose(p);
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
    auto other = rt.compile(kjit::Program("other.cu", k_other_source), {});
    std::ofstream(cubin_path + ".other", std::ios::binary) << other.cubin;
    std::printf("bench_disk_hit on %s: cubin %zu bytes, entry in %s\n", kjit::Device::get(0).name().c_str(),
                r.cubin.size(), c.cache_dir.c_str());
  }
  // The kjit children find the cache through KJIT_CACHE_DIR, as deployments configure it.
  ::setenv("KJIT_CACHE_DIR", c.cache_dir.c_str(), 1);
  std::vector<double> raw, raw_posix, hit, hit_path, raw_launched, hit_launched, raw_warm,
      hit_warm;
  for (int i = 0; i < processes; ++i) {
    raw.push_back(run_child(argv[0], "raw", c.cache_dir.string(), cubin_path));
    hit.push_back(run_child(argv[0], "kjit", c.cache_dir.string(), cubin_path));
    raw_posix.push_back(run_child(argv[0], "rawposix", c.cache_dir.string(), cubin_path));
    hit_path.push_back(run_child(argv[0], "kjitpath", c.cache_dir.string(), cubin_path));
    raw_launched.push_back(run_child(argv[0], "raw1", c.cache_dir.string(), cubin_path));
    hit_launched.push_back(run_child(argv[0], "kjit1", c.cache_dir.string(), cubin_path));
    raw_warm.push_back(run_child(argv[0], "rawwarm", c.cache_dir.string(), cubin_path));
    hit_warm.push_back(run_child(argv[0], "kjitwarm", c.cache_dir.string(), cubin_path));
    for (double v : {raw.back(), hit.back(), raw_posix.back(), hit_path.back(), raw_launched.back(),
                     hit_launched.back(), raw_warm.back(), hit_warm.back()}) {
      if (v < 0) {
        std::fprintf(stderr, "a child failed\n");
        return 2;
      }
    }
  }
  for (int i = 0; i < 3; ++i) run_child(argv[0], "detail", c.cache_dir.string(), cubin_path);
  for (int i = 0; i < 5; ++i) run_child(argv[0], "parts", c.cache_dir.string(), cubin_path);
  using kjit::bench_util::median;
  std::printf("\nmedians of %d fresh processes each; raw = ifstream read + cuModuleLoadData + cuModuleGetFunction, "
              "raw POSIX = the same with open/read\n", processes);
  kjit::bench_util::row("disk hit -> launchable kernel, us", median(hit), median(raw), "us",
                        "reported");
  kjit::bench_util::row("same against the raw POSIX read, us", median(hit), median(raw_posix), "us",
                        "reported");
  kjit::bench_util::row("same, cache dir in RuntimeConfig (caller builds a path), us", median(hit_path),
                        median(raw), "us", "reported");
  kjit::bench_util::row("disk hit -> first launch completed, us", median(hit_launched), median(raw_launched), "us",
                        "reported (both pay lazy function loading)");
  kjit::bench_util::row("after another program's hit (raw: its load), against the POSIX floor so warmed, us",
                        median(hit_warm), median(raw_warm), "us", "reported (kjit's own work once its code has run)");
  std::filesystem::remove_all(dir);
  return 0;
}
