// bench_compile_headers: what a standard header costs a kernel's cold compile. Each kernel of a
// small set (the lecture's GELU and square, a row softmax) is compiled by kjit (cache disabled,
// no precompiled headers: every compile is NVRTC's whole work) as it is and with one header
// added that it does not use: <math.h>, <cmath>, <algorithm>, <limits>, <type_traits>,
// <cstdint>, <cfloat>, <complex>. Runs are interleaved; the table gives the medians of wall time and
// of the process's CPU time (which other programs on a busy machine disturb less), the ratio
// against the same kernel without the header measured in the same run (target: <= 1.3x), the
// module globals of the PTX beyond the kernel's own (target: 0) and the cubin size ratio
// (target: <= 1.2x). The last column compiles the same header as libcu++'s (<cuda/std/...>,
// without kjit's nvcc environment: what kjit mapped these headers to before) for the GELU kernel.
//
// By default each compile runs in a process of its own (fork, then a new Runtime compiles once
// and exits), as `kjit compile` does and as a program's first kernel is compiled: NVRTC starts
// cold and the process's memory is new. --in-process compiles everything in this process, one
// Runtime, which measures a long-running program's later compiles (NVRTC warm; its memory
// given back to the system after each compile and faulted in again, which a header that makes
// NVRTC use more memory pays for).
//
//   bench_compile_headers [--repeats 5] [--arch sm_90] [--no-libcu] [--in-process]
#include <kjit/kjit.hpp>

#include "bench_util.hpp"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <cstring>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <string>
#include <vector>

namespace {

struct Kernel {
  const char* name;
  const char* source;
};

const Kernel k_kernels[] = {
    {"gelu", R"(__global__ void gelu_kernel(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { float v = x[i]; y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v))); }
}
)"},
    {"square", R"(__global__ void square_matrix_kernel(const float* matrix, float* result, int width, int height) {
  int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < height && col < width) { int idx = row * width + col; result[idx] = matrix[idx] * matrix[idx]; }
}
)"},
    {"softmax", R"(__global__ void softmax_rows(const float* x, float* y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float m = -3.0e38f, s = 0.0f;
  for (int c = 0; c < cols; ++c) m = fmaxf(m, x[r * cols + c]);
  for (int c = 0; c < cols; ++c) s += expf(x[r * cols + c] - m);
  for (int c = 0; c < cols; ++c) y[r * cols + c] = expf(x[r * cols + c] - m) / s;
}
)"},
};

const char* k_headers[] = {"math.h", "cmath", "algorithm", "limits", "type_traits", "cstdint", "cfloat", "complex"};

// libcu++'s header for each (what kjit mapped them to before).
const char* libcu_header(const std::string& h) {
  if (h == "math.h" || h == "cmath") return "cuda/std/cmath";
  if (h == "algorithm") return "cuda/std/__algorithm_";
  if (h == "limits") return "cuda/std/limits";
  if (h == "type_traits") return "cuda/std/type_traits";
  if (h == "cstdint") return "cuda/std/cstdint";
  if (h == "cfloat") return "cuda/std/cfloat";
  return "cuda/std/complex";
}

// Module-scope variables of a PTX text (.global and .const), kernels' own string literals included.
int module_globals(const std::string& ptx) {
  int n = 0;
  for (const char* kind : {"\n.global ", "\n.const ", "\n.visible .global ", "\n.visible .const ", "\n.weak .global "}) {
    for (auto p = ptx.find(kind); p != std::string::npos; p = ptx.find(kind, p + 1)) ++n;
  }
  return n;
}

double cpu_ms() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (double(u.ru_utime.tv_sec) + double(u.ru_stime.tv_sec)) * 1e3 +
         (double(u.ru_utime.tv_usec) + double(u.ru_stime.tv_usec)) / 1e3;
}

struct Sample {
  std::vector<double> ms, cpu;
  int globals = 0;
  std::size_t cubin = 0;
};

void compile_into(kjit::Runtime& rt, const std::string& src, const kjit::CompileOptions& o, Sample& s) {
  const double t0 = kjit::bench_util::now_us(), c0 = cpu_ms();
  const kjit::CompileResult r = rt.compile(kjit::Program("bench.cu", src), o);
  s.ms.push_back((kjit::bench_util::now_us() - t0) / 1000.0);
  s.cpu.push_back(cpu_ms() - c0);
  s.globals = module_globals(r.ptx);
  s.cubin = r.cubin.size();
}

// The same in a child process of its own: a fresh Runtime and a cold NVRTC. The child reports its
// compile's wall and CPU time, the PTX's module globals and the cubin's size through a pipe.
void compile_fresh(const kjit::RuntimeConfig& config, const std::string& src, const kjit::CompileOptions& o, Sample& s) {
  int fds[2];
  if (pipe(fds) != 0) std::abort();
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    double out[4] = {0, 0, -1, 0};
    try {
      kjit::Runtime rt(config);
      Sample one;
      compile_into(rt, src, o, one);
      out[0] = one.ms[0];
      out[1] = one.cpu[0];
      out[2] = one.globals;
      out[3] = double(one.cubin);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "compile failed: %s\n", e.what());
    }
    if (write(fds[1], out, sizeof out) != sizeof out) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  double in[4] = {0, 0, -1, 0};
  const bool got = read(fds[0], in, sizeof in) == sizeof in;
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!got || in[2] < 0) {
    std::fprintf(stderr, "bench_compile_headers: a child's compile failed\n");
    std::exit(1);
  }
  s.ms.push_back(in[0]);
  s.cpu.push_back(in[1]);
  s.globals = int(in[2]);
  s.cubin = std::size_t(in[3]);
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 5;
  std::string arch = "sm_90";
  bool libcu = true, fresh = true;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--arch") && i + 1 < argc) arch = argv[++i];
    else if (!std::strcmp(argv[i], "--no-libcu")) libcu = false;
    else if (!std::strcmp(argv[i], "--in-process")) fresh = false;
    else {
      std::fprintf(stderr, "usage: bench_compile_headers [--repeats N] [--arch sm_90] [--no-libcu] [--in-process]\n");
      return 2;
    }
  }
  kjit::RuntimeConfig config;
  config.cache_disabled = true;
  config.precompiled_headers = false;
  const kjit::CompileOptions options{.arch = kjit::Arch::parse(arch)};
  const kjit::CompileOptions bare{.arch = kjit::Arch::parse(arch), .nvcc_environment = false};
  std::optional<kjit::Runtime> in_process;
  if (!fresh) {
    in_process.emplace(config);
    in_process->compile(kjit::Program("warmup.cu", k_kernels[0].source), options);  // NVRTC's first-call setup
  }
  auto compile = [&](const std::string& src, const kjit::CompileOptions& o, Sample& s) {
    if (fresh) compile_fresh(config, src, o, s);
    else compile_into(*in_process, src, o, s);
  };

  std::printf("cold compile (cache disabled, no PCH), %s, %s, median of %d interleaved runs\n", arch.c_str(),
              fresh ? "each in a new process" : "all in one process", repeats);
  std::printf("%-8s %-12s %10s %10s %7s %9s %9s %7s %8s %8s %14s\n", "kernel", "header", "without ms", "with ms",
              "ratio", "cpu w/o", "cpu with", "ratio", "+globals", "cubin x", "libcu++ ms");
  double worst = 0, worst_cpu = 0;
  for (const Kernel& k : k_kernels) {
    Sample base;
    std::vector<Sample> with(std::size(k_headers)), old(std::size(k_headers));
    const bool show_libcu = libcu && std::string(k.name) == "gelu";
    for (int r = 0; r < repeats; ++r) {
      for (std::size_t h = 0; h < std::size(k_headers); ++h) {
        compile(k.source, options, base);
        compile(std::string("#include <") + k_headers[h] + ">\n" + k.source, options, with[h]);
        if (show_libcu && r < 3) {
          compile(std::string("#include <") + libcu_header(k_headers[h]) + ">\n" + k.source, bare, old[h]);
        }
      }
    }
    const double b = kjit::bench_util::median(base.ms), bc = kjit::bench_util::median(base.cpu);
    for (std::size_t h = 0; h < std::size(k_headers); ++h) {
      const double w = kjit::bench_util::median(with[h].ms), wc = kjit::bench_util::median(with[h].cpu);
      worst = std::max(worst, w / b);
      worst_cpu = std::max(worst_cpu, wc / bc);
      char old_ms[32] = "-";
      if (!old[h].ms.empty()) {
        std::snprintf(old_ms, sizeof old_ms, "%.1f (%+d)", kjit::bench_util::median(old[h].ms), old[h].globals - base.globals);
      }
      std::printf("%-8s %-12s %10.1f %10.1f %6.2fx %9.1f %9.1f %6.2fx %+8d %7.2fx %14s\n", k.name, k_headers[h], b, w,
                  w / b, bc, wc, wc / bc, with[h].globals - base.globals,
                  base.cubin ? double(with[h].cubin) / double(base.cubin) : 0.0, old_ms);
    }
  }
  std::printf("worst ratio %.2fx wall, %.2fx cpu (target <= 1.30x)\n", worst, worst_cpu);
  return 0;
}
