// bench_warm: how much faster `kjit warm` (kjit::warm) fills an empty cache with N compiles at
// once than with one, and what NVRTC precompiled headers save on header-heavy kernels. No GPU
// (named arch). Every run warms into a fresh empty cache; medians of --repeats runs.
//
//   bench_warm [--jobs 1,2,16] [--repeats 3] [--variants 64] [--heavy-variants 6] [--arch sm_90]
//              [--skip-heavy]
//
// Part 1: --variants kernel variants (16 files x variants/16 defines each, small kernels with
// some arithmetic), warmed with every -j of --jobs (PCH off, as they share no headers); prints
// the median time per -j and the speedup against the first -j (target: >= 1.7x with -j 2 on
// a 2-core machine, >= 10x with -j 16 on a 16-core one).
// Part 2: --heavy-variants kernel files (same options) that include <cub/block/block_reduce.cuh>
// and <cuda/std/...>, warmed with -j 1 with and without precompiled headers; prints both
// medians and the ratio.
#include <kjit/tools.hpp>

#include "bench_util.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace {

std::vector<unsigned> parse_jobs(const std::string& s) {
  std::vector<unsigned> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    auto comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    if (comma > pos) out.push_back(static_cast<unsigned>(std::stoul(s.substr(pos, comma - pos))));
    pos = comma + 1;
  }
  return out;
}

void write(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// `files` kernel files with `per_file` variants each (defines KJIT_BENCH_V=0..per_file-1; not V,
// which names template parameters in CCCL).
void make_manifest(const std::filesystem::path& dir, int files, int per_file, bool heavy) {
  std::string entries;
  for (int f = 0; f < files; ++f) {
    std::string name = (heavy ? "heavy" : "k") + std::to_string(f) + ".cu";
    std::string src;
    if (heavy) {
      src = "#include <cub/block/block_reduce.cuh>\n#include <cuda/std/type_traits>\n#include <cuda/std/limits>\n"
            "extern \"C\" __global__ void reduce" + std::to_string(f) + "(const float* x, float* y) {\n"
            "  using R = cub::BlockReduce<float, 128 * (KJIT_BENCH_V + 1)>;\n"
            "  __shared__ typename R::TempStorage t;\n"
            "  float v = R(t).Sum(x[threadIdx.x] * " + std::to_string(f + 1) + ".0f);\n"
            "  if (threadIdx.x == 0) y[blockIdx.x] = v + cuda::std::numeric_limits<float>::epsilon();\n}\n";
    } else {
      src = "extern \"C\" __global__ void k" + std::to_string(f) + "(float* x, const float* y, int n) {\n"
            "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i >= n) return;\n"
            "  float v = x[i], w = y[i];\n"
            "  for (int r = 0; r < 8 + KJIT_BENCH_V; ++r) { v = v * " + std::to_string(f + 2) +
            ".0f + sinf(w); w = w * 0.5f + cosf(v); }\n  x[i] = v + w;\n}\n";
    }
    write(dir / name, src);
    std::string variants;
    for (int v = 0; v < per_file; ++v) {
      variants += std::string(v ? "," : "") + R"({"name": "v)" + std::to_string(v) + R"(", "defines": ["KJIT_BENCH_V=)" +
                  std::to_string(v) + R"("]})";
    }
    // Each run really compiles: kjit turns NVRTC's own cache (12.9+) off by itself.
    entries += std::string(f ? "," : "") + R"({"file": ")" + name + R"(", )" +
               R"("variants": [)" + variants + "]}";
  }
  write(dir / "kjit.json", R"({"kjit_manifest": 1, "kernels": [)" + entries + "]}");
}

// Warms `dir` into a fresh empty cache; returns the wall time in ms (or -1 on a failure).
double warm_once(const std::filesystem::path& dir, const std::filesystem::path& cache, const kjit::Arch& arch,
                 unsigned jobs, bool pch) {
  std::filesystem::remove_all(cache);
  kjit::RuntimeConfig rc;
  rc.cache_dir = cache;
  rc.log = [](kjit::LogLevel, std::string_view) {};
  auto t0 = kjit::bench_util::now_us();
  auto report = kjit::warm({.sources = {dir}, .archs = {arch}, .jobs = jobs, .precompiled_headers = pch, .runtime = rc});
  double ms = (kjit::bench_util::now_us() - t0) / 1000.0;
  if (!report.ok() || report.compiled != report.items.size()) {
    for (const auto& i : report.items) {
      if (!i.error.empty()) std::fprintf(stderr, "%s\n", i.error.c_str());
    }
    return -1;
  }
  return ms;
}

}  // namespace

int main(int argc, char** argv) try {
  std::vector<unsigned> jobs = {1, 2};
  int repeats = 3, variants = 64, heavy_variants = 6;
  std::string arch_text = "sm_90";
  bool skip_heavy = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw kjit::UsageError(a + " needs a value");
      return argv[++i];
    };
    if (a == "--jobs") jobs = parse_jobs(next());
    else if (a == "--repeats") repeats = std::stoi(next());
    else if (a == "--variants") variants = std::stoi(next());
    else if (a == "--heavy-variants") heavy_variants = std::stoi(next());
    else if (a == "--arch") arch_text = next();
    else if (a == "--skip-heavy") skip_heavy = true;
    else {
      std::printf("usage: bench_warm [--jobs 1,2,16] [--repeats 3] [--variants 64] [--heavy-variants 6] "
                  "[--arch sm_90] [--skip-heavy]\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  kjit::Arch arch = kjit::Arch::parse(arch_text);
  auto root = std::filesystem::temp_directory_path() / ("kjit-bench-warm-" + std::to_string(::getpid()));
  std::filesystem::create_directories(root);
  std::printf("bench_warm: NVRTC %s, %u hardware threads, arch %s, median of %d runs, each into an empty cache\n",
              kjit::nvrtc_version().c_str(), std::thread::hardware_concurrency(), arch.str().c_str(), repeats);

  const int files = 16, per_file = std::max(1, variants / files);
  make_manifest(root / "small", files, per_file, false);
  std::printf("\n%d kernel variants (%d files x %d variants), precompiled headers off:\n", files * per_file, files,
              per_file);
  double base = 0;
  for (unsigned j : jobs) {
    std::vector<double> times;
    for (int r = 0; r < repeats; ++r) times.push_back(warm_once(root / "small", root / "cache", arch, j, false));
    double med = kjit::bench_util::median(times);
    if (base == 0) base = med;
    std::printf("  -j %-3u %9.0f ms   speedup vs -j %u: %5.2fx   (runs:", j, med, jobs.front(), base / med);
    for (double t : times) std::printf(" %.0f", t);
    std::printf(")\n");
    std::fflush(stdout);
  }

  if (!skip_heavy) {
    // One variant per file: NVRTC uses a PCH only for the same command line (defines included).
    const int heavy_files = std::max(1, heavy_variants), heavy_per_file = 1;
    make_manifest(root / "heavy", heavy_files, heavy_per_file, true);
    std::printf("\n%d header-heavy variants (<cub/block/block_reduce.cuh>, <cuda/std/...>; %d files x %d), -j 1:\n",
                heavy_files * heavy_per_file, heavy_files, heavy_per_file);
    double t[2];
    for (bool pch : {false, true}) {
      std::vector<double> times;
      for (int r = 0; r < repeats; ++r) times.push_back(warm_once(root / "heavy", root / "cache", arch, 1, pch));
      t[pch] = kjit::bench_util::median(times);
      std::printf("  PCH %-3s %9.0f ms   (runs:", pch ? "on" : "off", t[pch]);
      for (double x : times) std::printf(" %.0f", x);
      std::printf(")\n");
      std::fflush(stdout);
    }
    std::printf("  without / with PCH: %.2fx\n", t[1] > 0 ? t[0] / t[1] : 0.0);
  }
  std::filesystem::remove_all(root);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_warm: %s\n", e.what());
  return 2;
}
