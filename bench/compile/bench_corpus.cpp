// bench_corpus: the cold compile of real kernels, kjit against nvcc, in one run. No GPU (a named
// arch). The files: the 8 of tests/data/nvcc_corpus with the nvcc flags their builds use (as
// tests/unit/test_compile_nvcc_corpus.cpp gives them) and the 4 of kernels_src/ with the
// instantiations their manifest asks for. Each round, interleaved:
//   kjit, fast path on    one fresh process (fork) with a Runtime, cache disabled, compiles every
//                         file to a cubin in turn, as `kjit warm -j 1` into an empty cache would
//   kjit, fast path off   the same with RuntimeConfig::nvrtc_fast off (KJIT_NVRTC_FAST=off)
//   nvcc -cubin           `nvcc -cubin -arch=sm_XX FLAGS FILE` for each file; a kernels_src/
//                         file through a wrapper that includes it and takes the address of each
//                         instantiation, so that nvcc compiles the same kernels
// Prints each file's median wall time and the totals' medians (wall, and CPU: kjit's process,
// nvcc's children), with kjit's total over nvcc's (target, issue #51: at most 1).
//
//   bench_corpus [--repeats 3] [--arch sm_90] [--nvcc PATH]
#include <kjit/kjit.hpp>

#include "bench_util.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct File {
  std::string name;
  fs::path dir;
  std::vector<std::string> flags;
  std::vector<std::string> instantiate;
};

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

double cpu_ms(int who) {
  rusage u{};
  getrusage(who, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

std::vector<File> corpus(const fs::path& source_dir) {
  const fs::path c = source_dir / "tests/data/nvcc_corpus";
  const std::string include = "-I" + (c / "include").string();
  std::vector<File> files = {
      {"gelu_lecture.cu", c, {"-O3", "-lineinfo"}, {}},
      {"vector_add_host.cu", c, {"-O2", "-Xcompiler", "-Wall", "--default-stream", "per-thread"}, {}},
      {"softmax_llmc.cu", c, {"--use_fast_math", "-gencode", "arch=compute_90,code=sm_90"}, {}},
      {"scale_cublas_types.cu", c, {include, "-lcublas"}, {}},
      {"templated_reduce.cu", c, {"--expt-relaxed-constexpr", "-std=c++17"}, {"block_max<float, 128>", "block_max<int, 256>"}},
      {"sgemm_relaxed_constexpr.cu", c, {"--expt-relaxed-constexpr", "-res-usage", "-arch=sm_90"}, {}},
      {"lambda_transform.cu", c, {"--extended-lambda", "-Xptxas", "-v"}, {}},
      {"rng_types.cu", c, {"-g", "-Xcompiler", "-Wextra,-fPIC", "-lineinfo"}, {}},
  };
  const fs::path k = source_dir / "kernels_src";
  const nlohmann::json manifest = nlohmann::json::parse(read_text(k / "kjit.json"));
  for (const auto& kernel : manifest["kernels"]) {
    File f{kernel["file"], k, {}, {}};
    for (const auto& e : kernel.value("instantiate", nlohmann::json::array())) f.instantiate.push_back(e);
    files.push_back(std::move(f));
  }
  return files;
}

// Each file's wall milliseconds, then the process's CPU milliseconds, from a forked child.
std::vector<double> kjit_round(const std::vector<File>& files, const std::string& arch, bool fast) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string out;
    try {
      const double cpu_start = cpu_ms(RUSAGE_SELF);
      kjit::RuntimeConfig c;
      c.cache_disabled = true;
      c.nvrtc_fast = fast;
      c.log = [](kjit::LogLevel, std::string_view) {};
      kjit::Runtime rt(c);
      for (const auto& f : files) {
        const double start = kjit::bench_util::now_us();
        kjit::Program p(f.name, read_text(f.dir / f.name));
        p.directory(f.dir);
        for (const auto& e : f.instantiate) p.instantiate(e);
        const kjit::CompileResult r = rt.compile(p, {.arch = kjit::Arch::parse(arch), .flags = f.flags});
        if (r.cubin.empty()) _exit(1);
        out += std::to_string((kjit::bench_util::now_us() - start) / 1000) + "\n";
      }
      out += std::to_string(cpu_ms(RUSAGE_SELF) - cpu_start) + "\n";
    } catch (const std::exception& e) {
      std::fprintf(stderr, "kjit: %s\n", e.what());
      _exit(1);
    }
    if (write(fds[1], out.data(), out.size()) != static_cast<ssize_t>(out.size())) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  std::string in;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) in.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  std::vector<double> v;
  std::istringstream lines(in);
  for (double d; lines >> d;) v.push_back(d);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || v.size() != files.size() + 1) return {};
  return v;
}

std::string shell_quoted(const std::string& s) { return "'" + s + "'"; }

// The same shape from nvcc: each file's wall milliseconds, then its children's CPU milliseconds.
std::vector<double> nvcc_round(const std::vector<File>& files, const std::string& arch, const std::string& nvcc,
                               const fs::path& scratch) {
  std::vector<double> v;
  const double cpu_start = cpu_ms(RUSAGE_CHILDREN);
  for (std::size_t i = 0; i < files.size(); ++i) {
    const File& f = files[i];
    std::string input = f.name;
    std::string flags;
    for (const auto& flag : f.flags) flags += " " + shell_quoted(flag);
    if (!f.instantiate.empty() && f.dir.filename() == "kernels_src") {
      // nvcc instantiates what host code names: a wrapper takes each kernel's address.
      const fs::path wrapper = scratch / ("wrap_" + f.name);
      std::string text = "#include \"" + (f.dir / f.name).string() + "\"\n";
      for (std::size_t k = 0; k < f.instantiate.size(); ++k) {
        text += "[[maybe_unused]] static auto k_" + std::to_string(k) + " = &" + f.instantiate[k] + ";\n";
      }
      std::ofstream(wrapper) << text;
      input = wrapper.string();
      flags += " -I" + shell_quoted(f.dir.string());
    }
    const std::string command = "cd " + shell_quoted(f.dir.string()) + " && " + shell_quoted(nvcc) + " -cubin -arch=" + arch + flags +
                                " " + shell_quoted(input) + " -o " + shell_quoted((scratch / ("out" + std::to_string(i) + ".cubin")).string()) +
                                " >/dev/null 2>&1";
    const double start = kjit::bench_util::now_us();
    if (std::system(command.c_str()) != 0) {
      std::fprintf(stderr, "nvcc failed: %s\n", command.c_str());
      return {};
    }
    v.push_back((kjit::bench_util::now_us() - start) / 1000);
  }
  v.push_back(cpu_ms(RUSAGE_CHILDREN) - cpu_start);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 3;
  std::string arch = "sm_90";
  std::string nvcc;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--arch") && i + 1 < argc) arch = argv[++i];
    else if (!std::strcmp(argv[i], "--nvcc") && i + 1 < argc) nvcc = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_corpus [--repeats 3] [--arch sm_90] [--nvcc PATH]\n");
      return 2;
    }
  }
  if (nvcc.empty()) {
    for (const char* root : std::initializer_list<const char*>{std::getenv("CUDA_HOME"), "/usr/local/cuda"}) {
      if (root && fs::exists(fs::path(root) / "bin/nvcc")) {
        nvcc = (fs::path(root) / "bin/nvcc").string();
        break;
      }
    }
  }
  if (nvcc.empty()) {
    std::fprintf(stderr, "bench_corpus: no nvcc (CUDA_HOME/bin/nvcc, /usr/local/cuda/bin/nvcc); name one with --nvcc\n");
    return 3;
  }
  const std::vector<File> files = corpus(KJIT_BENCH_SOURCE_DIR);
  const fs::path scratch = fs::temp_directory_path() / ("kjit-bench-corpus-" + std::to_string(getpid()));
  fs::create_directories(scratch);
  std::printf("bench_corpus: %zu files to %s cubins, %d rounds, %ld cores, nvcc %s\n", files.size(), arch.c_str(),
              repeats, sysconf(_SC_NPROCESSORS_ONLN), nvcc.c_str());
  const char* names[] = {"kjit, fast path on", "kjit, fast path off", "nvcc -cubin"};
  std::vector<std::vector<std::vector<double>>> runs(3);  // [row][round][file..., cpu]
  for (int round = 0; round < repeats; ++round) {
    for (int row = 0; row < 3; ++row) {
      std::vector<double> v = row == 2 ? nvcc_round(files, arch, nvcc, scratch) : kjit_round(files, arch, row == 0);
      if (v.empty()) {
        std::fprintf(stderr, "%s failed\n", names[row]);
        fs::remove_all(scratch);
        return 1;
      }
      runs[row].push_back(std::move(v));
    }
  }
  fs::remove_all(scratch);
  auto median_of = [&](int row, std::size_t index) {
    std::vector<double> v;
    for (const auto& r : runs[row]) v.push_back(r[index]);
    return kjit::bench_util::median(v);
  };
  auto total_median = [&](int row) {
    std::vector<double> v;
    for (const auto& r : runs[row]) {
      double sum = 0;
      for (std::size_t i = 0; i < files.size(); ++i) sum += r[i];
      v.push_back(sum);
    }
    return kjit::bench_util::median(v);
  };
  std::printf("%-28s %12s %12s %12s %10s\n", "file (median wall ms)", "kjit fast", "kjit off", "nvcc", "fast/nvcc");
  for (std::size_t i = 0; i < files.size(); ++i) {
    const double a = median_of(0, i), b = median_of(1, i), n = median_of(2, i);
    std::printf("%-28s %12.1f %12.1f %12.1f %10.3f\n", files[i].name.c_str(), a, b, n, a / n);
  }
  const double ta = total_median(0), tb = total_median(1), tn = total_median(2);
  const double ca = median_of(0, files.size()), cb = median_of(1, files.size()), cn = median_of(2, files.size());
  std::printf("%-28s %12.1f %12.1f %12.1f %10.3f\n", "total, wall", ta, tb, tn, ta / tn);
  std::printf("%-28s %12.1f %12.1f %12.1f %10.3f\n", "total, CPU", ca, cb, cn, ca / cn);
  std::printf("fast path on / off: wall %.3f, CPU %.3f; target (issue #51): kjit's total at most nvcc's (ratio <= 1)\n",
              ta / tb, ca / cb);
  return 0;
}
