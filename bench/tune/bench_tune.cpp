// bench_tune: kjit::Tuner against @triton.autotune on the lecture's square kernel over 16M floats,
// 8 configurations (items per block 256, 512, 1024, 2048 x 128 or 256 threads; Triton: BLOCK x
// num_warps 4 or 8), each first call timed in a fresh process after CUDA init and allocation:
//   cold: empty cache (compile 8 candidates in parallel, time them with successive halving)
//   warm: decision and kernels on disk (nothing timed)
// then, in one process, a tuned call once decided against a plain launch of the same kernel
// (per call, 20,000 enqueues then one sync), and Triton's first calls the same way when python3
// with Triton runs bench/tune/triton_autotune.py (0: cold and warm cache; 1: cache_results).
// The same 8 candidates as a manifest's "tuning" entry: `kjit tune` decides them ahead of time
// (the whole CLI process, empty cache), a fresh process's first call through
// KernelLoader::tuner then times nothing, and a decided spec call (key and grid from the spec)
// against a plain launch.
// Usage: bench_tune [runs=5]
#include <kjit/tools.hpp>
#include <kjit/tune.hpp>
#include <kjit/loader.hpp>

#include "bench_util.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using kjit::bench_util::median;
using kjit::bench_util::now_us;

namespace {

const char* k_source = R"(
template <int ITEMS>
__global__ void square(const float* x, float* y, int n) {
  int base = blockIdx.x * ITEMS;
  for (int j = threadIdx.x; j < ITEMS; j += blockDim.x) {
    int i = base + j;
    if (i < n) y[i] = x[i] * x[i];
  }
}
)";

std::vector<kjit::TuneCandidate> candidates() {
  std::vector<kjit::TuneCandidate> out;
  for (int items : {256, 512, 1024, 2048}) {
    for (unsigned threads : {128u, 256u}) {
      kjit::TuneCandidate c;
      c.kernel = "square<" + std::to_string(items) + ">";
      c.block = threads;
      out.push_back(c);
    }
  }
  return out;
}

using Square = void(const float*, float*, int);
constexpr int k_n = 1 << 24;

int items_of(const kjit::TuneCandidate& c) { return std::atoi(c.kernel.c_str() + 7); }
kjit::Dim3 grid(const kjit::TuneCandidate& c) { return kjit::ceil_div(k_n, static_cast<std::size_t>(items_of(c))); }

// A fresh process's first call, after CUDA init and allocation: `call(x, y)` makes the tuner and
// launches; prints its milliseconds, whether it timed, and the winner.
template <class Call>
int first_call(Call call) {
  kjit::Device dev = kjit::Device::current();
  kjit::DeviceBuffer<float> x(k_n), y(k_n);
  x.fill_bytes(0x3F);
  dev.synchronize();
  const double t0 = now_us();
  const kjit::TuneDecision d = call(x.data(), y.data());
  dev.synchronize();
  std::printf("%.3f %s %s\n", (now_us() - t0) / 1e3, d.source == kjit::TuneDecision::Source::timed ? "timed" : "cached",
              d.label.c_str());
  return 0;
}

kjit::TuneOptions quiet() {
  kjit::TuneOptions options;
  options.print = false;
  return options;
}

// Host cost per call, medians of 7 rounds of 20,000 one-block launches: `tuned()` against
// `plain()` (the same kernel launched directly); prints both and their ratio.
template <class Tuned, class Plain>
void compare_calls(const char* what, Tuned tuned, Plain plain) {
  kjit::Device dev = kjit::Device::current();
  const int calls = 20000;
  std::vector<double> tuned_us, plain_us;
  for (int round = 0; round < 7; ++round) {
    dev.synchronize();
    double t0 = now_us();
    for (int i = 0; i < calls; ++i) tuned();
    tuned_us.push_back((now_us() - t0) / calls);
    dev.synchronize();
    t0 = now_us();
    for (int i = 0; i < calls; ++i) plain();
    plain_us.push_back((now_us() - t0) / calls);
    dev.synchronize();
  }
  std::printf("%s once decided %.3f us, plain launch %.3f us: ratio %.3f (target 1.05 at most)\n", what,
              median(tuned_us), median(plain_us), median(tuned_us) / median(plain_us));
}

// The tuner in code.
int child() {
  return first_call([](const float* x, float* y) {
    kjit::Tuner<Square> tuner(kjit::Program("bench_tune_square.cu", k_source), candidates(), quiet());
    return tuner.launch(kjit::TuneKey().add_bucketed("n", k_n), grid, nullptr, {}, x, y, k_n);
  });
}

// The candidates as a manifest's tuning entry (param: items per block).
std::string manifest() {
  std::string candidates;
  for (const auto& c : ::candidates()) {
    candidates += std::string(candidates.empty() ? "" : ", ") + "{\"kernel\": \"" + c.kernel +
                  "\", \"block\": " + std::to_string(c.block.x) + ", \"param\": " + std::to_string(items_of(c)) + "}";
  }
  return R"J({"kjit_manifest": 1, "kernels": [{"file": "bench_tune_square.cu", "tuning": [{"name": "square",
  "candidates": [)J" + candidates + R"J(], "key": ["pow2(n)"], "grid": "ceil_div(n, param)",
  "arguments": [{"name": "x", "type": "const float*", "count": "n"}, {"name": "y", "type": "float*", "count": "n"},
                {"name": "n", "type": "int", "value": "n"}],
  "shapes": [{"n": 16777216}]}]}]})J";
}

void write_manifest(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "bench_tune_square.cu") << k_source;
  std::ofstream(dir / "kjit.json") << manifest();
}

// Through the manifest's tuner (kernels in KJIT_KERNEL_PATH).
int manifest_child() {
  return first_call([](const float* x, float* y) {
    kjit::KernelLoader loader;
    auto tuner = loader.tuner<Square>("bench_tune_square.cu", "square", {}, quiet());
    return tuner.launch({{"n", k_n}}, nullptr, x, y, k_n);
  });
}

struct ChildResult {
  double ms = 0;
  std::string label, source;
};

ChildResult run_child(const char* self, const std::string& cache, const std::string& kind = "child",
                      const std::string& env = "") {
  const std::string command = env + " KJIT_CACHE_DIR=" + cache + " " + self + " " + kind;
  ChildResult r;
  if (FILE* p = popen(command.c_str(), "r")) {
    char source[32] = {}, label[256] = {};
    if (std::fscanf(p, "%lf %31s %255[^\n]", &r.ms, source, label) != 3) r.ms = -1;
    r.label = label;
    r.source = source;
    pclose(p);
  }
  return r;
}

// triton_autotune.py's one JSON line, with TRITON_CACHE_DIR=cache.
std::string triton(const std::string& cache, const char* cache_results) {
  std::string out;
  const std::string command = "TRITON_CACHE_DIR=" + cache + " python3 " + std::string(KJIT_SOURCE_DIR) +
                              "/bench/tune/triton_autotune.py " + cache_results + " 2>/dev/null";
  if (FILE* p = popen(command.c_str(), "r")) {
    char line[4096];
    while (std::fgets(line, sizeof line, p) != nullptr) out += line;
    pclose(p);
  }
  return out.empty() ? "(no output)\n" : out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "child") return child();
  if (argc > 1 && std::string(argv[1]) == "manifest") return manifest_child();
  const int runs = argc > 1 ? std::atoi(argv[1]) : 5;
  std::printf("bench_tune on %s: square over 16M floats, 8 candidates, %d fresh processes per phase\n",
              kjit::Device::current().name().c_str(), runs);
  const auto base = std::filesystem::temp_directory_path() / ("kjit-bench-tune-" + std::to_string(::getpid()));
  std::vector<double> cold, warm;
  std::vector<std::string> winners;
  for (int r = 0; r < runs; ++r) {
    const std::string cache = (base / std::to_string(r)).string();
    const ChildResult c = run_child(argv[0], cache);
    const ChildResult w = run_child(argv[0], cache);
    cold.push_back(c.ms);
    warm.push_back(w.ms);
    winners.push_back(c.label);
    std::printf("  run %d: cold %.1f ms (%s, %s), warm %.3f ms (%s, %s)\n", r, c.ms, c.label.c_str(), c.source.c_str(),
                w.ms, w.label.c_str(), w.source.c_str());
  }
  std::filesystem::remove_all(base);
  std::printf("kjit first call, empty cache:                 %8.1f ms (median)\n", median(cold));
  std::printf("kjit first call, decision and kernel on disk: %8.3f ms (median; target 1 ms at most)\n", median(warm));

  // Once decided: a tuned call against a plain launch of the chosen kernel, same process.
  {
    kjit::DeviceBuffer<float> x(k_n), y(k_n);
    kjit::Tuner<Square> tuner(kjit::Program("bench_tune_square.cu", k_source), candidates(), quiet());
    const auto key = kjit::TuneKey().add_bucketed("n", k_n);
    const auto& d = tuner.launch(key, grid, nullptr, {}, x.data(), y.data(), k_n);
    auto kernel = tuner.engine().kernel(d.chosen);
    kjit::Kernel<Square> plain(kernel);
    const kjit::TuneCandidate& c = tuner.engine().candidate(d.chosen);
    // One block a launch keeps the GPU ahead of the host: the host's cost per call is compared.
    const auto one_block = [](const kjit::TuneCandidate&) { return kjit::Dim3(1); };
    const kjit::LaunchConfig cfg{.grid = 1, .block = c.block};
    compare_calls(
        "tuned call", [&] { tuner.launch(key, one_block, nullptr, {}, x.data(), y.data(), 1); },
        [&] { plain.launch(cfg, x.data(), y.data(), 1); });
  }

  // The manifest's tuning entry: kjit tune (a whole CLI process) into an empty cache, then a fresh
  // program's first call through the loader's tuner.
  {
    std::vector<double> ahead, first;
    for (int r = 0; r < runs; ++r) {
      const auto dir = base / ("manifest-" + std::to_string(r));
      write_manifest(dir / "kernels");
      const std::string cache = (dir / "cache").string();
      const double t0 = now_us();
      const int rc = std::system((std::string(KJIT_CLI) + " --cache-dir " + cache + " -q tune " +
                                  (dir / "kernels").string()).c_str());
      ahead.push_back((now_us() - t0) / 1e3);
      const ChildResult c = run_child(argv[0], cache, "manifest", "KJIT_KERNEL_PATH=" + (dir / "kernels").string());
      first.push_back(c.ms);
      std::printf("  run %d: kjit tune %.1f ms (exit %d), then first call %.3f ms (%s, %s)\n", r, ahead.back(), rc, c.ms,
                  c.label.c_str(), c.source.c_str());
    }
    std::filesystem::remove_all(base);
    std::printf("kjit tune MANIFEST, empty cache (whole process): %8.1f ms (median)\n", median(ahead));
    std::printf("then a program's first call (KernelLoader::tuner): %8.3f ms (median; target 1 ms at most)\n",
                median(first));
  }
  // Once decided: a spec call (key and grid from the manifest) against a plain launch.
  {
    kjit::DeviceBuffer<float> x(k_n), y(k_n);
    const auto dir = base / "manifest-calls";
    write_manifest(dir / "kernels");
    kjit::RuntimeConfig config = kjit::RuntimeConfig::from_environment();
    config.cache_dir = dir / "cache";
    kjit::Runtime rt(config);
    kjit::KernelLoader loader({.folders = {dir / "kernels"}}, rt);
    auto tuner = loader.tuner<Square>("bench_tune_square.cu", "square", {}, quiet());
    const auto& d = tuner.launch({{"n", 1}}, nullptr, x.data(), y.data(), 1);  // one block a launch
    kjit::Kernel<Square> plain(tuner.engine().kernel(d.chosen));
    const kjit::LaunchConfig cfg{.grid = 1, .block = tuner.engine().candidate(d.chosen).block};
    compare_calls(
        "spec call", [&] { tuner.launch({{"n", 1}}, nullptr, x.data(), y.data(), 1); },
        [&] { plain.launch(cfg, x.data(), y.data(), 1); });
    std::filesystem::remove_all(base);
  }

  // Triton on the same machine: cold (empty cache), warm (compiled kernels on disk), cache_results.
  const auto triton_cache = base.string() + "-triton";
  if (std::system("python3 -c 'import triton, torch' > /dev/null 2>&1") != 0) {
    std::printf("triton: not measured (python3 cannot import triton and torch)\n");
    return 0;
  }
  for (int r = 0; r < 2; ++r) {
    std::filesystem::remove_all(triton_cache);
    std::printf("triton run %d, empty cache: %s", r, triton(triton_cache, "0").c_str());
    for (const char* flag : {"0", "1", "1"}) {
      std::printf("triton run %d, kernels on disk, cache_results=%s: %s", r, flag, triton(triton_cache, flag).c_str());
    }
  }
  std::filesystem::remove_all(triton_cache);
  return 0;
}
