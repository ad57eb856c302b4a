// bench_link: linking with nvJitLink, kjit against the raw floor in the same run, alternating.
//   1. Cold link of two small -rdc programs: kjit Runtime::link on a key it has not seen (the
//      parts are disk hits; a new link name each run; its entry written by the worker) vs raw
//      nvJitLink create + add the same two relocatable cubins + complete + get the cubin.
//      libnvJitLink is loaded before both timers.
//   2. A cached link in a fresh Runtime (its key from the parts' keys, then a disk hit) vs a plain
//      compile's disk hit in a fresh Runtime: a linked result is a cache entry like any other.
// The cold link is also timed in the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID): what the
// request path itself spends, apart from waiting on a loaded machine's disk or scheduler.
// Needs no GPU (sm_90). bench_link [runs]
#include <kjit/tools.hpp>

#include "bench_util.hpp"
#include "core/base/toolkit_location.hpp"

#include <fmt/format.h>
#include <cuda.h>
#include <nvJitLink.h>

#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

using kjit::bench_util::median;
using kjit::bench_util::now_us;

namespace {

kjit::Program caller() {
  return kjit::Program("caller.cu",
                       "extern __device__ float twice(float v);\n"
                       "extern \"C\" __global__ void apply(const float* x, float* y, int n) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i < n) y[i] = twice(x[i]) + 1.0f;\n"
                       "}\n");
}
kjit::Program callee() { return kjit::Program("callee.cu", "__device__ float twice(float v) { return 2.0f * v; }\n"); }

// The raw floor: nvJitLink's own calls, resolved from the same library kjit loads.
struct RawLink {
  decltype(&nvJitLinkCreate) create;
  decltype(&nvJitLinkAddData) add;
  decltype(&nvJitLinkComplete) complete;
  decltype(&nvJitLinkGetLinkedCubinSize) size;
  decltype(&nvJitLinkGetLinkedCubin) cubin;
  decltype(&nvJitLinkDestroy) destroy;

  RawLink() {
    const std::string soname = fmt::format("libnvJitLink.so.{}", CUDA_VERSION / 1000);
    void* h = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen((kjit::base::nvrtc_library_dir() / soname).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      std::fprintf(stderr, "bench_link: cannot load libnvJitLink\n");
      std::exit(2);
    }
    create = reinterpret_cast<decltype(create)>(dlsym(h, "nvJitLinkCreate"));
    add = reinterpret_cast<decltype(add)>(dlsym(h, "nvJitLinkAddData"));
    complete = reinterpret_cast<decltype(complete)>(dlsym(h, "nvJitLinkComplete"));
    size = reinterpret_cast<decltype(size)>(dlsym(h, "nvJitLinkGetLinkedCubinSize"));
    cubin = reinterpret_cast<decltype(cubin)>(dlsym(h, "nvJitLinkGetLinkedCubin"));
    destroy = reinterpret_cast<decltype(destroy)>(dlsym(h, "nvJitLinkDestroy"));
  }

  std::string link(const std::string& a, const std::string& b, const std::string& arch) const {
    const std::string option = "-arch=" + arch;
    const char* options[] = {option.c_str()};
    nvJitLinkHandle handle = nullptr;
    create(&handle, 1, options);
    add(handle, NVJITLINK_INPUT_CUBIN, a.data(), a.size(), "caller.cu");
    add(handle, NVJITLINK_INPUT_CUBIN, b.data(), b.size(), "callee.cu");
    std::string out;
    if (complete(handle) == NVJITLINK_SUCCESS) {
      std::size_t n = 0;
      size(handle, &n);
      out.resize(n);
      cubin(handle, out.data());
    }
    destroy(&handle);
    return out;
  }
};

double thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

kjit::RuntimeConfig config(const std::filesystem::path& dir) {
  kjit::RuntimeConfig c;
  c.cache_dir = dir;
  c.log = [](kjit::LogLevel, std::string_view) {};
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 31;
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("kjit-bench-link-{}", getpid());
  std::filesystem::remove_all(dir);
  const kjit::CompileOptions options{.arch = kjit::Arch::sm(90)};
  const kjit::CompileOptions rdc{.arch = kjit::Arch::sm(90), .flags = {"-rdc=true"}};
  kjit::Runtime rt(config(dir));
  // The parts, compiled once (kjit's link requests find them on disk; the raw floor gets them too).
  const std::string a = rt.compile(caller(), rdc).cubin, b = rt.compile(callee(), rdc).cubin;
  RawLink raw;
  if (raw.link(a, b, "sm_90").empty() || rt.link(kjit::Link("warm-up").add(caller()).add(callee()), options).cubin.empty()) {
    std::fprintf(stderr, "bench_link: the warm-up link failed\n");
    return 2;
  }

  std::vector<double> kjit_cold, raw_cold, kjit_cpu, raw_cpu, link_hit, compile_hit;
  for (int i = 0; i < runs; ++i) {
    double c0 = thread_cpu_us();
    double t0 = now_us();
    auto r = rt.link(kjit::Link(fmt::format("pair-{}", i)).add(caller()).add(callee()), options);
    double t1 = now_us();
    kjit_cpu.push_back(thread_cpu_us() - c0);
    if (r.outcome != kjit::Outcome::compiled) return 3;
    kjit_cold.push_back(t1 - t0);
    c0 = thread_cpu_us();
    t0 = now_us();
    std::string cubin = raw.link(a, b, "sm_90");
    t1 = now_us();
    raw_cpu.push_back(thread_cpu_us() - c0);
    raw_cold.push_back(t1 - t0);

    // The link's entry is written by rt's worker (Storage::Fill::unlocked): on the disk within moments.
    const auto entry = dir / r.key.substr(0, 2) / (r.key.substr(2) + ".kjit");
    for (int wait = 0; wait < 2000 && !std::filesystem::exists(entry); ++wait) usleep(500);
    {
      kjit::Runtime fresh(config(dir));
      t0 = now_us();
      auto hit = fresh.link(kjit::Link(fmt::format("pair-{}", i)).add(caller()).add(callee()), options);
      t1 = now_us();
      if (hit.outcome != kjit::Outcome::hit) return 3;
      link_hit.push_back(t1 - t0);
    }
    {
      kjit::Runtime fresh(config(dir));
      t0 = now_us();
      auto hit = fresh.compile(caller(), rdc);
      t1 = now_us();
      if (hit.outcome != kjit::Outcome::hit) return 3;
      compile_hit.push_back(t1 - t0);
    }
  }
  std::filesystem::remove_all(dir);
  std::printf("bench_link: %d runs, sm_90, nvJitLink %s, medians\n", runs, kjit::nvjitlink_version().c_str());
  kjit::bench_util::row("cold link of two -rdc programs (raw: nvJitLink)", median(kjit_cold) / 1000,
                        median(raw_cold) / 1000, "ms", "<= 1.1");
  kjit::bench_util::row("  the same, the calling thread's CPU time", median(kjit_cpu) / 1000, median(raw_cpu) / 1000,
                        "ms", "report");
  kjit::bench_util::row("cached link vs a compile's disk hit (fresh Runtime)", median(link_hit),
                        median(compile_hit), "us", "report");
  return 0;
}
