// bench_prepare: what NVRTC's first use costs a program, part by part, and what kjit::prepare()
// takes off its first compile. No GPU (a named arch). Each row is a fresh process (fork; the
// parent never touches NVRTC) that takes some steps, then compiles the lecture's square to a cubin,
// timed as "first compile". Raw NVRTC rows (--minimal --no-cache, what kjit's fast path asks for):
//   nothing first              the compile opens libnvrtc itself (the floor: what a program pays)
//   libnvrtc opened            dlopen + nvrtcVersion before
//   + builtins                 and libnvrtc-builtins loaded (dlopen, as kjit does before a compile)
//   + empty kernel to PTX      and an empty kernel compiled to PTX (NVRTC's first-compile set-up)
//   + empty kernel to a cubin  the same to a cubin (ptxas's set-up too)
//   kjit::prepare(Wait::yes)   kjit's preparation, waited for
// kjit rows (Runtime::compile, cache disabled; the first compile includes making the Runtime):
//   kjit, KJIT_PREPARE off          the request opens NVRTC (RuntimeConfig::prepare off)
//   kjit, Runtime made at once      the Runtime's preparation starts as its request does (a
//                                   program whose first request makes its Runtime): what
//                                   preparation costs when nothing overlaps it
//   kjit, kjit::prepare(Wait::yes)  prepared first, as at a program's start
// Rows interleaved; medians of N. "steps" is the time of the steps before the clock, "total" both;
// "first / floor" the first compile against the floor's (each section against its own first row).
//
//   bench_prepare [--repeats 11] [--arch sm_90]
#include <kjit/kjit.hpp>

#include "bench_util.hpp"

#include <dlfcn.h>
#include <nvrtc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

const char* k_square = R"(
extern "C" __global__ void square_matrix_kernel(const float* matrix, float* result, int width, int height) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < height && col < width) {
        int idx = row * width + col;
        result[idx] = matrix[idx] * matrix[idx];
    }
}
)";

struct Sample {
  double steps_ms = -1, compile_ms = -1, compile_cpu_ms = 0;
};

double cpu_ms() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

// One raw compile of `source` with `options`; false when NVRTC refused it.
bool compile(const char* source, const std::vector<std::string>& options, bool cubin) {
  std::vector<const char*> argv;
  for (const auto& o : options) argv.push_back(o.c_str());
  nvrtcProgram p;
  if (nvrtcCreateProgram(&p, source, "k.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS) return false;
  bool ok = nvrtcCompileProgram(p, static_cast<int>(argv.size()), argv.data()) == NVRTC_SUCCESS;
  std::size_t n = 0;
  if (ok && cubin) {
    nvrtcGetCUBINSize(p, &n);
    std::string out(n, '\0');
    nvrtcGetCUBIN(p, out.data());
  } else if (ok) {
    nvrtcGetPTXSize(p, &n);
    std::string out(n, '\0');
    nvrtcGetPTX(p, out.data());
  }
  nvrtcDestroyProgram(&p);
  return ok;
}

void open_nvrtc() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);  // kjit's forwarding symbol: opens libnvrtc as a compile would
}

// libnvrtc-builtins beside the libnvrtc kjit opened.
void load_builtins() {
  const std::string library = kjit::toolkit_paths().nvrtc_library;
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  const std::string dir = library.substr(0, library.rfind('/') + 1);
  dlopen((dir + "libnvrtc-builtins.so." + std::to_string(major) + "." + std::to_string(minor)).c_str(),
         RTLD_NOW | RTLD_GLOBAL);
}

// Fork: `before` (timed as the steps), then `first` (timed as the first compile; false: it
// failed); the figures come back through a pipe.
Sample in_child(const std::function<void()>& before, const std::function<bool()>& first) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    Sample s;
    double t = kjit::bench_util::now_us();
    before();
    s.steps_ms = (kjit::bench_util::now_us() - t) / 1000;
    t = kjit::bench_util::now_us();
    const double cpu = cpu_ms();
    if (first()) {
      s.compile_ms = (kjit::bench_util::now_us() - t) / 1000;
      s.compile_cpu_ms = cpu_ms() - cpu;
    }
    char buf[128];
    const int n = std::snprintf(buf, sizeof buf, "%f %f %f\n", s.steps_ms, s.compile_ms, s.compile_cpu_ms);
    if (write(fds[1], buf, static_cast<std::size_t>(n)) != n) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  char buf[128] = {};
  const ssize_t n = read(fds[0], buf, sizeof buf - 1);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  Sample s;
  if (n > 0) std::sscanf(buf, "%lf %lf %lf", &s.steps_ms, &s.compile_ms, &s.compile_cpu_ms);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 11;
  std::string arch = "sm_90";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--arch") && i + 1 < argc) arch = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_prepare [--repeats 11] [--arch sm_90]\n");
      return 2;
    }
  }
  const std::vector<std::string> options = {"--gpu-architecture=" + arch, "--no-cache", "--minimal"};
  const char* empty = "extern \"C\" __global__ void empty() {}\n";
  const std::string virtual_arch = "--gpu-architecture=compute_" + arch.substr(arch.find('_') + 1);
  struct Row {
    const char* name;
    std::function<void()> before;
    std::function<bool()> first;
    std::vector<double> steps, compile, cpu;
  };
  auto raw = [&] { return compile(k_square, options, true); };
  auto kjit_compile = [&](bool prepare) {
    return [&arch, prepare] {
      kjit::RuntimeConfig c;
      c.cache_disabled = true;
      c.prepare = prepare;
      c.log = [](kjit::LogLevel, std::string_view) {};
      kjit::Runtime rt(c);
      return !rt.compile(kjit::Program("square.cu", k_square), {.arch = kjit::Arch::parse(arch)}).cubin.empty();
    };
  };
  std::vector<Row> rows = {
      {"nothing first (the floor)", [] {}, raw, {}, {}, {}},
      {"libnvrtc opened", [] { open_nvrtc(); }, raw, {}, {}, {}},
      {"+ builtins", [] { open_nvrtc(); load_builtins(); }, raw, {}, {}, {}},
      {"+ empty kernel to PTX",
       [&] {
         open_nvrtc();
         load_builtins();
         compile(empty, {virtual_arch, "--no-cache", "--minimal"}, false);
       },
       raw, {}, {}, {}},
      {"+ empty kernel to a cubin",
       [&] {
         open_nvrtc();
         load_builtins();
         compile(empty, options, true);
       },
       raw, {}, {}, {}},
      {"kjit::prepare(Wait::yes)", [] { kjit::prepare(kjit::Wait::yes); }, raw, {}, {}, {}},
      {"kjit, KJIT_PREPARE off", [] {}, kjit_compile(false), {}, {}, {}},
      {"kjit, Runtime made at once", [] {}, kjit_compile(true), {}, {}, {}},
      {"kjit, kjit::prepare(Wait::yes)", [] { kjit::prepare(kjit::Wait::yes); }, kjit_compile(true), {}, {}, {}},
  };
  constexpr std::size_t k_kjit_rows = 6;  // the first kjit row
  int major = 0, minor = 0;
  std::printf("bench_prepare: NVRTC's first use, part by part; the lecture's square to a %s cubin (--minimal), %d "
              "rounds, a fresh process each, %ld cores\n",
              arch.c_str(), repeats, sysconf(_SC_NPROCESSORS_ONLN));
  for (int round = 0; round < repeats; ++round) {
    for (auto& r : rows) {
      const Sample s = in_child(r.before, r.first);
      if (s.compile_ms < 0) {
        std::fprintf(stderr, "%s failed\n", r.name);
        return 1;
      }
      r.steps.push_back(s.steps_ms);
      r.compile.push_back(s.compile_ms);
      r.cpu.push_back(s.compile_cpu_ms);
    }
  }
  nvrtcVersion(&major, &minor);
  std::printf("NVRTC %d.%d (%s)\n", major, minor, kjit::toolkit_paths().nvrtc_library.c_str());
  using kjit::bench_util::median;
  std::printf("%-32s %10s %16s %14s %10s %14s\n", "row (medians)", "steps ms", "first compile ms", "its CPU ms",
              "total ms", "first / floor");
  for (std::size_t n = 0; n < rows.size(); ++n) {
    const Row& r = rows[n];
    const double floor = median(rows[n < k_kjit_rows ? 0 : k_kjit_rows].compile);
    std::vector<double> total;
    for (std::size_t i = 0; i < r.steps.size(); ++i) total.push_back(r.steps[i] + r.compile[i]);
    std::printf("%-32s %10.1f %16.1f %14.1f %10.1f %14.3f\n", r.name, median(r.steps), median(r.compile),
                median(r.cpu), median(total), median(r.compile) / floor);
  }
  std::printf("the first compile after kjit::prepare(Wait::yes) against the floor: the cold path a program that "
              "prepares at start sees (#58)\n");
  return 0;
}
