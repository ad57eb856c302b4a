// bench_kernels: GB/s of the lecture kernels (kjit::kernels) beside a device-to-device copy and
// a read-only kernel measured in the same run, timed with kjit::bench (CUDA events, warm-up,
// L2 flushed before each repetition, median), the way peers_kernels.py times PyTorch and
// Triton with triton.testing.do_bench. Bytes counted: read + written.
//
//   bench_kernels [--sizes 4096x1024,4096x4096,4096x16384] [--type float|half|bfloat16]
//                 [--json results.json]
#include <kjit/bench.hpp>
#include <kjit/kernels.hpp>
#include <kjit/tools.hpp>
#include <kjit/tune.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>

namespace {

// Two ways to read every element once and write nothing (unless a sum is exactly 1234.5): a
// fixed grid with 4 16-byte loads in flight per thread, and one 16-byte load per thread. The
// faster of the two is the read-only bandwidth the mean kernel is measured against.
const char* k_read_source = R"(
extern "C" __global__ void __launch_bounds__(512) read_only(const float4* __restrict__ x, unsigned long long n4,
                                                            float* sink) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.0f;
  for (; i + 3 * stride < n4; i += 4 * stride) {
    float4 a = x[i], b = x[i + stride], c = x[i + 2 * stride], d = x[i + 3 * stride];
    acc += a.x + a.y + a.z + a.w + b.x + b.y + b.z + b.w + c.x + c.y + c.z + c.w + d.x + d.y + d.z + d.w;
  }
  for (; i < n4; i += stride) { float4 a = x[i]; acc += a.x + a.y + a.z + a.w; }
  if (acc == 1234.5f) *sink = acc;
}
extern "C" __global__ void __launch_bounds__(256) read_one(const float4* __restrict__ x, unsigned long long n4,
                                                           float* sink) {
  const unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 a = x[i];
    if (a.x + a.y + a.z + a.w == 1234.5f) *sink = a.x;
  }
}
)";

struct Size {
  int rows, cols;
};

std::vector<Size> parse_sizes(const std::string& text) {
  std::vector<Size> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    Size s{};
    if (std::sscanf(item.c_str(), "%dx%d", &s.rows, &s.cols) != 2 || s.rows < 1 || s.cols < 1) {
      throw CLI::ValidationError("--sizes", "\"" + item + "\" is not ROWSxCOLS (for example 4096x1024)");
    }
    out.push_back(s);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

std::string today() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::localtime(&t));
  return buf;
}

template <class T>
nlohmann::json run(const std::vector<Size>& sizes, const kjit::BenchOptions& options) {
  kjit::Device device = kjit::Device::current();
  kjit::kernels::Kernels<T> k(device);  // softmax and mean tuned (KJIT_TUNE)
  kjit::TuneOptions hand_picked;
  hand_picked.mode = kjit::TuneMode::off;
  kjit::kernels::Kernels<T> hand(device, kjit::Runtime::global(), hand_picked);  // the rules alone
  kjit::Stream stream(device);
  auto read_module = kjit::Runtime::global().load(kjit::Program("bench_read_only.cu", k_read_source));
  auto read_only = read_module.kernel<void(const void*, unsigned long long, float*)>("read_only");
  auto read_one = read_module.kernel<void(const void*, unsigned long long, float*)>("read_one");
  const unsigned read_blocks = static_cast<unsigned>(device.multiprocessor_count() *
                                                     std::max(1, read_only.max_active_blocks_per_sm(512)));
  kjit::DeviceBuffer<float> sink(1), mean_out(1);

  std::printf("%-12s %9s %9s %9s %9s %9s %9s %9s %12s   %s\n", "size", "copy", "read", "square", "gelu", "softmax",
              "mean", "naive", "ratios", "(GB/s; ratios: square, gelu, softmax vs copy; mean vs read)");
  nlohmann::json rows = nlohmann::json::array();
  for (Size s : sizes) {
    const std::size_t n = static_cast<std::size_t>(s.rows) * static_cast<std::size_t>(s.cols);
    std::vector<T> host(n);
    std::mt19937 gen(42);
    std::uniform_real_distribution<float> dist(0.5f, 2.0f);
    for (auto& v : host) v = T(gen() & 1 ? dist(gen) : -dist(gen));
    kjit::DeviceBuffer<T> x{std::span<const T>(host)}, y(n);
    const double bytes = static_cast<double>(n * sizeof(T));
    auto time = [&](auto&& work) {
      kjit::BenchOptions o = options;
      o.stream = stream.handle();
      return kjit::bench(work, o, device).median_ms;
    };
    nlohmann::json ms;
    ms["copy"] = time([&](CUstream_st* st) { y.copy_from(x, st); });
    const double read_loop = time([&](CUstream_st* st) {
      read_only.launch({.grid = std::min<unsigned>(read_blocks, kjit::ceil_div(n * sizeof(T) / 16, 512)), .block = 512,
                        .stream = st},
                       x.data(), n * sizeof(T) / 16, sink.data());
    });
    const double read_flat = time([&](CUstream_st* st) {
      read_one.launch({.grid = kjit::ceil_div(n * sizeof(T) / 16, 256), .block = 256, .stream = st}, x.data(),
                      n * sizeof(T) / 16, sink.data());
    });
    ms["read"] = std::min(read_loop, read_flat);
    ms["square"] = time([&](CUstream_st* st) { k.square(x.data(), y.data(), n, st); });
    ms["gelu"] = time([&](CUstream_st* st) { k.gelu(x.data(), y.data(), n, st); });
    ms["softmax"] = time([&](CUstream_st* st) { k.softmax(x.data(), y.data(), s.rows, s.cols, st); });
    ms["mean"] = time([&](CUstream_st* st) { k.mean(x.data(), n, mean_out.data(), st); });
    ms["softmax_hand_picked"] = time([&](CUstream_st* st) { hand.softmax(x.data(), y.data(), s.rows, s.cols, st); });
    ms["mean_hand_picked"] = time([&](CUstream_st* st) { hand.mean(x.data(), n, mean_out.data(), st); });
    if constexpr (std::is_same_v<T, float>) {
      ms["square_naive_16x16"] =
          time([&](CUstream_st* st) { k.square_naive(x.data(), y.data(), s.cols, s.rows, st); });
    }
    nlohmann::json gbps;
    for (auto& [name, t] : ms.items()) {
      const bool read_only_bytes = name == "read" || name.rfind("mean", 0) == 0;
      gbps[name] = (read_only_bytes ? bytes : 2 * bytes) / (t.template get<double>() * 1e-3) / 1e9;
    }
    auto g = [&](const char* name) { return gbps.contains(name) ? gbps[name].get<double>() : 0.0; };
    std::printf("%-12s %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f   %.3f %.3f %.3f %.3f\n",
                fmt::format("{}x{}", s.rows, s.cols).c_str(), g("copy"), g("read"), g("square"), g("gelu"),
                g("softmax"), g("mean"), g("square_naive_16x16"), g("square") / g("copy"), g("gelu") / g("copy"),
                g("softmax") / g("copy"), g("mean") / g("read"));
    std::printf("%-12s tuned against hand-picked: softmax %.0f / %.0f GB/s (%.3fx), mean %.0f / %.0f GB/s (%.3fx)\n", "",
                g("softmax"), g("softmax_hand_picked"), g("softmax") / g("softmax_hand_picked"), g("mean"),
                g("mean_hand_picked"), g("mean") / g("mean_hand_picked"));
    std::fflush(stdout);
    rows.push_back({{"rows", s.rows},
                    {"cols", s.cols},
                    {"median_ms", ms},
                    {"GBps", gbps},
                    {"ratio",
                     {{"square_vs_copy", g("square") / g("copy")},
                      {"gelu_vs_copy", g("gelu") / g("copy")},
                      {"softmax_vs_copy", g("softmax") / g("copy")},
                      {"mean_vs_read", g("mean") / g("read")}}},
                    {"kernels",
                     {{"square", k.square_kernel_name()},
                      {"softmax", k.softmax_kernel_name(s.cols, true)},
                      {"mean", k.mean_kernel_name()}}}});
  }
  return rows;
}

// --sweep: the float square kernel at other block sizes and unroll factors, GELU in its two
// forms, and the mean at other shapes and grids, instantiated from kernels_src, beside the copy.
void sweep(const std::vector<Size>& sizes, const kjit::BenchOptions& options) {
  kjit::Device device = kjit::Device::current();
  kjit::Stream stream(device);
  const std::filesystem::path dir = KJIT_BENCH_KERNELS_DIR;
  kjit::Program base = kjit::read_program(dir / "square.cu");
  const std::vector<std::pair<int, int>> shapes = {{256, 1}, {128, 2}, {512, 4}, {128, 8}};
  for (Size s : sizes) {
    const std::size_t n = static_cast<std::size_t>(s.rows) * static_cast<std::size_t>(s.cols);
    std::vector<float> host(n, 1.5f);
    kjit::DeviceBuffer<float> x{std::span<const float>(host)}, y(n);
    const double bytes = 2.0 * static_cast<double>(n * sizeof(float));
    kjit::BenchOptions o = options;
    o.stream = stream.handle();
    const double copy = bytes / (kjit::bench([&](CUstream_st* st) { y.copy_from(x, st); }, o, device).median_ms * 1e-3) / 1e9;
    std::printf("%dx%d copy %.0f GB/s\n", s.rows, s.cols, copy);
    kjit::Program p("square.cu", base.source());
    p.directory(dir);
    for (auto [block, unroll] : shapes) p.instantiate(fmt::format("kjit::square<float, {}, {}>", block, unroll));
    auto m = kjit::Runtime::global().load(p);
    for (auto [block, unroll] : shapes) {
      auto k = m.kernel<void(const float*, float*, unsigned long long)>(
          fmt::format("kjit::square<float, {}, {}>", block, unroll));
      const unsigned grid = kjit::ceil_div(n / 4, static_cast<std::size_t>(block) * unroll);
      const double t = kjit::bench([&](CUstream_st* st) {
        k.launch({.grid = grid, .block = static_cast<unsigned>(block), .stream = st}, x.data(), y.data(), n);
      }, o, device).median_ms;
      std::printf("  square   block %4d unroll %d grid %6u: %6.0f GB/s  %.3f of copy\n", block, unroll, grid,
                  bytes / (t * 1e-3) / 1e9, bytes / (t * 1e-3) / 1e9 / copy);
    }
    // GELU: x / (1 + exp(-2u)) (the default) against 0.5 x (1 + tanhf(u)).
    for (const auto& [label, defines] : std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"gelu exp", {}}, {"gelu tanhf", {"KJIT_GELU_TANHF"}}}) {
      kjit::Program gp("gelu.cu", kjit::read_program(dir / "gelu.cu").source());
      gp.directory(dir);
      for (auto [block, unroll] : {std::pair{256, 1}, std::pair{128, 2}, std::pair{512, 4}}) {
        gp.instantiate(fmt::format("kjit::gelu<float, {}, {}>", block, unroll));
      }
      kjit::CompileOptions co;
      co.defines = defines;
      auto gm = kjit::Runtime::global().load(gp, co);
      for (auto [block, unroll] : {std::pair{256, 1}, std::pair{128, 2}, std::pair{512, 4}}) {
        auto k = gm.kernel<void(const float*, float*, unsigned long long)>(
            fmt::format("kjit::gelu<float, {}, {}>", block, unroll));
        const unsigned grid = kjit::ceil_div(n / 4, static_cast<std::size_t>(block) * unroll);
        const double t = kjit::bench([&](CUstream_st* st) {
          k.launch({.grid = grid, .block = static_cast<unsigned>(block), .stream = st}, x.data(), y.data(), n);
        }, o, device).median_ms;
        std::printf("  %-10s block %4d unroll %d: %6.0f GB/s  %.3f of copy\n", label.c_str(), block, unroll,
                    bytes / (t * 1e-3) / 1e9, bytes / (t * 1e-3) / 1e9 / copy);
      }
    }
    // The mean at other shapes and grids (its partial sums need one double per block).
    kjit::Program mp("mean.cu", kjit::read_program(dir / "mean.cu").source());
    mp.directory(dir);
    const std::vector<std::pair<int, int>> mean_shapes = {{512, 4}, {256, 4}, {256, 1}, {512, 1}, {256, 2}, {1024, 4}};
    for (auto [block, unroll] : mean_shapes) mp.instantiate(fmt::format("kjit::mean<float, {}, {}>", block, unroll));
    auto mm = kjit::Runtime::global().load(mp);
    kjit::DeviceBuffer<double> partials(1 << 20);
    kjit::DeviceBuffer<unsigned int> ticket(1);
    ticket.fill_bytes(0);
    kjit::DeviceBuffer<float> out(1);
    for (auto [block, unroll] : mean_shapes) {
      auto k = mm.kernel<void(const float*, unsigned long long, double*, unsigned int*, float*)>(
          fmt::format("kjit::mean<float, {}, {}>", block, unroll));
      const unsigned full = std::min<unsigned>(1u << 20, kjit::ceil_div(n / 4, static_cast<std::size_t>(block) * unroll));
      const unsigned resident = static_cast<unsigned>(device.multiprocessor_count() *
                                                      std::max(1, k.max_active_blocks_per_sm(block)));
      for (unsigned waves : {1u, 2u, 4u, 8u, 0u}) {
        const unsigned grid = waves ? std::min(full, resident * waves) : full;
        const double t = kjit::bench([&](CUstream_st* st) {
          k.launch({.grid = grid, .block = static_cast<unsigned>(block), .stream = st}, x.data(), n, partials.data(),
                   ticket.data(), out.data());
        }, o, device).median_ms;
        std::printf("  mean block %4d unroll %d grid %7u (%s): %6.0f GB/s read\n", block, unroll, grid,
                    waves ? fmt::format("{} waves", waves).c_str() : "full", bytes / 2 / (t * 1e-3) / 1e9);
      }
    }
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"GB/s of kjit's lecture kernels beside a device-to-device copy and a read-only kernel "
               "measured in the same run (kjit::bench: CUDA events, L2 flushed, median)"};
  std::string sizes_text = "4096x1024,4096x4096,4096x16384", type = "float", json_path;
  kjit::BenchOptions options;
  app.add_option("--sizes", sizes_text, "Comma-separated ROWSxCOLS")->capture_default_str();
  app.add_option("--type", type, "Element type")->check(CLI::IsMember({"float", "half", "bfloat16"}))->capture_default_str();
  app.add_option("--json", json_path, "Also write the results to this JSON file");
  bool do_sweep = false;
  app.add_flag("--sweep", do_sweep, "Try the float square, GELU and mean kernels at other shapes and grids");
  app.add_option("--warmup-ms", options.warmup_ms, "Warm-up time per measurement")->capture_default_str();
  app.add_option("--repeat-ms", options.repeat_ms, "Timed repetitions per measurement")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    auto sizes = parse_sizes(sizes_text);
    if (do_sweep) {
      sweep(sizes, options);
      return 0;
    }
    kjit::Device device = kjit::Device::current();
    std::printf("bench_kernels %s, %s (%s), kjit %s, NVRTC %s, %s\n", today().c_str(), device.name().c_str(),
                type.c_str(), std::string(kjit::version()).c_str(), kjit::nvrtc_version().c_str(),
                "median of kjit::bench (warm-up 25 ms, 100 ms of repetitions, L2 flushed)");
    nlohmann::json rows = type == "half"       ? run<kjit::half>(sizes, options)
                          : type == "bfloat16" ? run<kjit::bfloat16>(sizes, options)
                                               : run<float>(sizes, options);
    if (!json_path.empty()) {
      nlohmann::json doc = {{"date", today()}, {"gpu", device.name()}, {"type", type}, {"kjit", kjit::version()},
                            {"nvrtc", kjit::nvrtc_version()}, {"timing", "kjit::bench median, L2 flushed"},
                            {"results", rows}};
      std::ofstream(json_path) << doc.dump(2) << "\n";
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_kernels: %s\n", e.what());
    return 1;
  }
  return 0;
}
