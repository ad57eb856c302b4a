// bench_cold: the cold compile of the lecture's square kernel (what bench/peers loads), kjit
// against raw NVRTC, all in one run. No GPU (a named arch). Rows:
//   raw NVRTC, default          nvrtcCompileProgram --gpu-architecture=sm_XX (the issue's floor)
//   raw NVRTC, --minimal        the same with NVRTC's minimal front end
//   raw NVRTC, CuPy's options   what CuPy's RawKernel asks for (-arch=sm_XX, --std=c++17, the
//                               CCCL and CUDA include dirs, -ftz=true, -default-device): a
//                               reference, not the same PTX (-ftz=true flushes denormals)
//   kjit, fast path on          Runtime::compile, cache disabled (every request compiles),
//                               RuntimeConfig::nvrtc_fast on: what a cold load compiles
//   kjit, fast path off         the same with KJIT_NVRTC_FAST=off
//   kjit, prepared at start     the fast path on, in a program that called kjit::prepare() at its
//                               start, 100 ms before its first request (its own start-up: CUDA init,
//                               reading data); the floor opens NVRTC inside its clock (#58)
//   raw NVRTC, extern "C"       the square as an extern "C" kernel (a C-named entry point)
//   raw, extern "C" + query     the same with kjit's type query (compile::KernelTypes: the appended
//                               variable template and one name expression): its cost alone, the
//                               ratio of these two rows (issue #55: within 1%)
//   kjit, extern "C", fast      Runtime::compile of the extern "C" square (with its query)
// Every NVRTC call has --no-cache (NVRTC 12.9+'s own cache would serve the repeats). Each
// measurement runs in a process of its own (fork; the parent never touches NVRTC), as a
// program's first kernel compiles; --in-process measures a long-running program's later
// compiles instead. Rows are interleaved; best and median of N, and each against the default.
// The PTX of every row but CuPy's must be byte-identical to the default's: the program says so.
//
//   bench_cold [--repeats 9] [--arch sm_90] [--in-process]
#include <kjit/kjit.hpp>

#include "bench_util.hpp"
#include "core/compile/kernel_types.hpp"

#include <nvrtc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

const char* k_square = R"(
__global__ void square_matrix_kernel(const float* matrix, float* result, int width, int height) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < height && col < width) {
        int idx = row * width + col;
        result[idx] = matrix[idx] * matrix[idx];
    }
}
)";

struct Sample {
  double ms = -1;   // wall
  double cpu = 0;   // the process's CPU time (user + system), which other programs disturb less
  std::string ptx;
};

double cpu_ms() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

const std::string k_square_c = std::string("extern \"C\" ") + k_square;

// One raw NVRTC compile to a cubin, timed from nvrtcCreateProgram to the cubin read; `query`: with
// kjit's type query for the extern "C" square's kernel.
Sample raw_nvrtc(const std::vector<std::string>& options, const std::string& source = k_square, bool query = false) {
  std::vector<const char*> argv;
  for (const auto& o : options) argv.push_back(o.c_str());
  const double start = kjit::bench_util::now_us();
  const double cpu_start = cpu_ms();
  nvrtcProgram p;
  const auto queries = query ? kjit::compile::KernelTypes::queries(source, options)
                             : std::vector<kjit::compile::KernelTypeQuery>{};
  const std::string text = query ? source + std::string(kjit::compile::KernelTypes::declaration()) : source;
  nvrtcCreateProgram(&p, text.c_str(), "square.cu", 0, nullptr, nullptr);
  for (const auto& q : queries) nvrtcAddNameExpression(p, q.expression.c_str());
  const nvrtcResult r = nvrtcCompileProgram(p, static_cast<int>(argv.size()), argv.data());
  Sample s;
  if (r == NVRTC_SUCCESS) {
    std::size_t n = 0;
    nvrtcGetCUBINSize(p, &n);
    std::string cubin(n, '\0');
    nvrtcGetCUBIN(p, cubin.data());
    s.ms = (kjit::bench_util::now_us() - start) / 1000;
    s.cpu = cpu_ms() - cpu_start;
    nvrtcGetPTXSize(p, &n);
    s.ptx.resize(n);
    nvrtcGetPTX(p, s.ptx.data());
    if (!s.ptx.empty() && s.ptx.back() == '\0') s.ptx.pop_back();
  } else {
    std::size_t n = 0;
    nvrtcGetProgramLogSize(p, &n);
    std::string log(n, '\0');
    nvrtcGetProgramLog(p, log.data());
    std::fprintf(stderr, "raw NVRTC failed: %s\n", log.c_str());
  }
  nvrtcDestroyProgram(&p);
  return s;
}

Sample kjit_compile(const std::string& arch, bool fast, const std::string& source = k_square);

// A program that prepares NVRTC at its start and requests its first kernel 100 ms later.
Sample kjit_prepared(const std::string& arch) {
  kjit::prepare();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return kjit_compile(arch, true);
}

Sample kjit_compile(const std::string& arch, bool fast, const std::string& source) {
  kjit::RuntimeConfig c;
  c.cache_disabled = true;
  c.nvrtc_fast = fast;
  c.log = [](kjit::LogLevel, std::string_view) {};
  const double start = kjit::bench_util::now_us();
  const double cpu_start = cpu_ms();
  kjit::Runtime rt(c);
  const kjit::CompileResult r = rt.compile(kjit::Program("square.cu", source), {.arch = kjit::Arch::parse(arch)});
  Sample s;
  s.ms = (kjit::bench_util::now_us() - start) / 1000;
  s.cpu = cpu_ms() - cpu_start;
  s.ptx = r.ptx;
  return s;
}

// `f` in a forked child; its sample comes back through a pipe (ms, then the PTX).
Sample in_child(const std::function<Sample()>& f) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    Sample s = f();
    std::string out = std::to_string(s.ms) + " " + std::to_string(s.cpu) + "\n" + s.ptx;
    std::size_t done = 0;
    while (done < out.size()) {
      const ssize_t w = write(fds[1], out.data() + done, out.size() - done);
      if (w <= 0) break;
      done += static_cast<std::size_t>(w);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string in;
  char buf[65536];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) in.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  Sample s;
  const std::size_t nl = in.find('\n');
  if (nl == std::string::npos) return s;
  std::sscanf(in.c_str(), "%lf %lf", &s.ms, &s.cpu);
  s.ptx = in.substr(nl + 1);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 9;
  std::string arch = "sm_90";
  bool in_process = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--arch") && i + 1 < argc) arch = argv[++i];
    else if (!std::strcmp(argv[i], "--in-process")) in_process = true;
    else {
      std::fprintf(stderr, "usage: bench_cold [--repeats 9] [--arch sm_90] [--in-process]\n");
      return 2;
    }
  }
  std::string include;
  for (const char* root : std::initializer_list<const char*>{std::getenv("CUDA_HOME"), "/usr/local/cuda"}) {
    if (root && std::filesystem::exists(std::filesystem::path(root) / "include/cuda_fp16.h")) {
      include = std::string(root) + "/include";
      break;
    }
  }
  const std::string gpu_arch = "--gpu-architecture=" + arch;
  struct Row {
    const char* name;
    std::function<Sample()> run;
    bool same_ptx;  // must equal the default's
    std::vector<double> ms, cpu;
    std::string ptx;
  };
  std::vector<Row> rows = {
      {"raw NVRTC, default", [&] { return raw_nvrtc({gpu_arch, "--no-cache"}); }, true, {}, {}, {}},
      {"raw NVRTC, --minimal", [&] { return raw_nvrtc({gpu_arch, "--no-cache", "--minimal"}); }, true, {}, {}, {}},
      {"raw NVRTC, -default-device", [&] { return raw_nvrtc({gpu_arch, "--no-cache", "-default-device"}); }, true, {}, {}, {}},
      {"raw NVRTC, CuPy's options",
       [&] {
         return raw_nvrtc({"--std=c++17", "-I" + include + "/cccl", "-I" + include, "-ftz=true", "-arch=" + arch,
                           "--device-as-default-execution-space", "--no-cache"});
       },
       false, {}, {}, {}},
      {"kjit, fast path on", [&] { return kjit_compile(arch, true); }, true, {}, {}, {}},
      {"kjit, fast path off", [&] { return kjit_compile(arch, false); }, true, {}, {}, {}},
      {"kjit, prepared at start", [&] { return kjit_prepared(arch); }, true, {}, {}, {}},
      {"raw NVRTC, extern \"C\"", [&] { return raw_nvrtc({gpu_arch, "--no-cache"}, k_square_c); }, false, {}, {}, {}},
      {"raw, extern \"C\" + query", [&] { return raw_nvrtc({gpu_arch, "--no-cache"}, k_square_c, true); }, false, {},
       {}, {}},
      {"kjit, extern \"C\", fast", [&] { return kjit_compile(arch, true, k_square_c); }, false, {}, {}, {}},
  };
  int nvrtc_major = 0, nvrtc_minor = 0;
  nvrtcVersion(&nvrtc_major, &nvrtc_minor);
  std::printf("bench_cold: the lecture's square to a %s cubin, NVRTC %d.%d, %d rounds, %s, %ld cores\n", arch.c_str(),
              nvrtc_major, nvrtc_minor, repeats, in_process ? "one process" : "a fresh process each",
              sysconf(_SC_NPROCESSORS_ONLN));
  if (in_process) {
    for (auto& r : rows) r.run();  // NVRTC's and kjit's first use, not counted
  }
  for (int round = 0; round < repeats; ++round) {
    for (auto& r : rows) {
      const Sample s = in_process ? r.run() : in_child(r.run);
      if (s.ms < 0) {
        std::fprintf(stderr, "%s failed\n", r.name);
        return 1;
      }
      r.ms.push_back(s.ms);
      r.cpu.push_back(s.cpu);
      r.ptx = s.ptx;
    }
  }
  const double floor_best = *std::min_element(rows[0].ms.begin(), rows[0].ms.end());
  const double floor_median = kjit::bench_util::median(rows[0].ms);
  const double floor_cpu = kjit::bench_util::median(rows[0].cpu);
  std::printf("%-28s %9s %9s %9s %9s %9s %9s  %s\n", "row", "best ms", "median ms", "best/def", "med/def", "cpu ms",
              "cpu/def", "PTX");
  int status = 0;
  for (const auto& r : rows) {
    const double best = *std::min_element(r.ms.begin(), r.ms.end());
    const double median = kjit::bench_util::median(r.ms);
    const double cpu = kjit::bench_util::median(r.cpu);
    const bool same = r.ptx == rows[0].ptx;
    if (r.same_ptx && !same) status = 1;
    std::printf("%-28s %9.1f %9.1f %9.3f %9.3f %9.1f %9.3f  %s\n", r.name, best, median, best / floor_best,
                median / floor_median, cpu, cpu / floor_cpu,
                same ? "same as default" : (r.same_ptx ? "DIFFERS (wrong)" : "differs (other options)"));
  }
  std::printf("target (#51, #58): kjit at most 0.8x the default (#58: prepared at start)\n");
  // The type query's cost alone: the extern "C" square with it against without it, both raw.
  const Row& plain_c = rows[rows.size() - 3];
  const Row& queried = rows[rows.size() - 2];
  std::printf("type query (issue #55, target within 1%%): median %.3fx, best %.3fx, cpu %.3fx of the same compile "
              "without it\n",
              kjit::bench_util::median(queried.ms) / kjit::bench_util::median(plain_c.ms),
              *std::min_element(queried.ms.begin(), queried.ms.end()) /
                  *std::min_element(plain_c.ms.begin(), plain_c.ms.end()),
              kjit::bench_util::median(queried.cpu) / kjit::bench_util::median(plain_c.cpu));
  return status;
}
