// bench_peers_kjit: kjit's side of bench/peers/peers.py, one phase per process, public API only.
//   bench_peers_kjit cold|warm CACHE_DIR [LAUNCHES]
// Calls kjit::prepare() first thing, as a program that compiles at run time does (NVRTC made
// ready on a thread of its own while the program starts: CuPy's import opens NVRTC as well).
// Measures, after cuInit and the primary context (as the Python peers measure after the
// framework import and CUDA init):
//   load_s   load_inline of the lecture's square kernel (build_directory = CACHE_DIR), the typed
//            kernel, the first launch and a sync: cold when CACHE_DIR is empty, warm when an
//            earlier process filled it
//   hot_s    the same again in the same process (the in-process registry)
//   call_us  LAUNCHES (default 20000) enqueues of a 16x16 launch, then one sync, per launch
//   first_result_s  from the process's start to the first call's result copied to the host: the
//            time PEERS_SPAWN_NS (CLOCK_MONOTONIC in ns, set by peers.py just before it started
//            this process) to then; absent without it
// Every result is checked against the square computed on the host from random inputs (never
// zero) written over a poisoned output. Prints one JSON line on stdout; exit 0 even when the
// check fails ("check" says why), 1 when kjit throws ("error" says what).
#include <kjit/tools.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace {

// The lecture's kernel, as peers.py gives it to CuPy and torch.cuda._compile_kernel.
const char* k_source = R"(extern "C" __global__ void square_matrix_kernel(const float* matrix, float* result, int width, int height) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < height && col < width) {
        int idx = row * width + col;
        result[idx] = matrix[idx] * matrix[idx];
    }
}
)";

using Square = kjit::Kernel<void(const float*, float*, int, int)>;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// Random inputs in +-[0.5, 2): never zero, so an output left at zero or unwritten shows.
std::vector<float> random_inputs(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> magnitude(0.5f, 2.0f);
  std::bernoulli_distribution negative(0.5);
  std::vector<float> v(n);
  for (auto& x : v) x = negative(gen) ? -magnitude(gen) : magnitude(gen);
  return v;
}

// A matrix on the device with its host copy, and an output poisoned before each check.
struct Case {
  int width, height;
  std::vector<float> host;
  kjit::DeviceBuffer<float> in, out;
  Case(int w, int h, unsigned seed)
      : width(w), height(h), host(random_inputs(static_cast<std::size_t>(w) * h, seed)),
        in(std::span<const float>(host)), out(host.size()) {}

  kjit::LaunchConfig config() const {
    return {.grid = {kjit::ceil_div(width, 16), kjit::ceil_div(height, 16)}, .block = {16, 16}};
  }
  void poison() { out.fill_bytes(0xFF); }  // NaN in every element
  // "ok", or what is wrong with the first bad element (of `got`, else of the output read now).
  std::string check(const char* what) const { return check(what, out.to_host()); }
  std::string check(const char* what, const std::vector<float>& got) const {
    for (std::size_t i = 0; i < got.size(); ++i) {
      float want = host[i] * host[i];
      if (!(std::fabs(got[i] - want) <= 1e-6f * want) || got[i] == 0.0f) {
        char buf[200];
        std::snprintf(buf, sizeof buf, "%s: element %zu of %dx%d is %g, expected %g (input %g)", what, i, height, width,
                      static_cast<double>(got[i]), static_cast<double>(want), static_cast<double>(host[i]));
        return buf;
      }
    }
    return "ok";
  }
};

// The request measured as load and as hot: what a user writes to get the kernel.
Square request(const std::filesystem::path& cache_dir, kjit::Outcome* outcome) {
  kjit::Module m = kjit::load_inline({
      .name = "square_matrix_extension",
      .cuda_sources = k_source,
      .functions = {"square_matrix_kernel"},
      .extra_cuda_cflags = {"-O2"},
      .build_directory = cache_dir,
  });
  if (outcome) *outcome = m.compile_result().outcome;
  return m.kernel<void(const float*, float*, int, int)>("square_matrix_kernel");
}

int usage() {
  std::fprintf(stderr, "usage: bench_peers_kjit cold|warm CACHE_DIR [LAUNCHES]\n");
  return 2;
}

// Nanoseconds on CLOCK_MONOTONIC (steady_clock's clock), as Python's time.monotonic_ns().
long long monotonic_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  kjit::prepare();  // first thing: NVRTC gets ready while the program starts
  if (argc < 3) return usage();
  const std::string mode = argv[1];
  if (mode != "cold" && mode != "warm") return usage();
  const std::filesystem::path cache_dir = argv[2];
  const long launches = argc > 3 ? std::atol(argv[3]) : 20000;
  if (launches <= 0) return usage();

  std::string out = "{\"peer\":\"kjit\",\"mode\":" + json_string(mode);
  try {
    out += ",\"version\":" + json_string(std::string(kjit::version()));
    if (!kjit::driver_available() || kjit::device_count() == 0) {
      std::printf("%s,\"error\":%s}\n", out.c_str(),
                  json_string("no CUDA device: " + kjit::driver_unavailable_reason()).c_str());
      return 1;
    }
    if (mode == "cold" && std::filesystem::exists(cache_dir) && !std::filesystem::is_empty(cache_dir)) {
      std::printf("%s,\"error\":%s}\n", out.c_str(), json_string("cold run on a non-empty cache dir " + cache_dir.string()).c_str());
      return 1;
    }
    // CUDA init outside the clock: cuInit, the primary context, the inputs on the device.
    kjit::Device device = kjit::Device::current();
    device.make_current();
    out += ",\"device\":" + json_string(device.name());
    Case small(53, 37, 1234);  // 4x3 blocks of 16x16, not square: a swapped width/height shows
    Case tiny(16, 16, 5678);   // the launch loop's shape, as peers.py
    small.poison();
    device.synchronize();

    std::string check = "ok";
    auto keep = [&](std::string c) {
      if (check == "ok" && c != "ok") check = std::move(c);
    };

    kjit::Outcome outcome{};
    double t0 = now_s();
    Square square = request(cache_dir, &outcome);
    square.launch(small.config(), small.in.data(), small.out.data(), small.width, small.height);
    device.synchronize();
    double load_s = now_s() - t0;
    const std::vector<float> first = small.out.to_host();  // the first result, on the host
    const long long first_ns = monotonic_ns();
    keep(small.check("first call", first));

    small.poison();
    device.synchronize();
    t0 = now_s();
    Square again = request(cache_dir, nullptr);
    again.launch(small.config(), small.in.data(), small.out.data(), small.width, small.height);
    device.synchronize();
    double hot_s = now_s() - t0;
    keep(small.check("hot call"));

    const kjit::LaunchConfig config = tiny.config();
    const float* x = tiny.in.data();
    float* y = tiny.out.data();
    for (int i = 0; i < 100; ++i) square.launch(config, x, y, 16, 16);
    tiny.poison();  // the check below sees what the timed launches wrote
    device.synchronize();
    t0 = now_s();
    for (long i = 0; i < launches; ++i) square.launch(config, x, y, 16, 16);
    device.synchronize();
    double call_us = (now_s() - t0) / static_cast<double>(launches) * 1e6;
    keep(tiny.check("launch loop"));

    char buf[256];
    std::snprintf(buf, sizeof buf, ",\"outcome\":%s,\"load_s\":%.9g,\"hot_s\":%.9g,\"call_us\":%.6g,\"launches\":%ld",
                  json_string(kjit::to_string(outcome)).c_str(), load_s, hot_s, call_us, launches);
    out += buf;
    out += ",\"nvrtc\":" + json_string(kjit::nvrtc_version());  // asked after the clocks: it waits for NVRTC's opening
    if (const char* spawn = std::getenv("PEERS_SPAWN_NS"); spawn != nullptr && *spawn) {
      std::snprintf(buf, sizeof buf, ",\"first_result_s\":%.9g", static_cast<double>(first_ns - std::atoll(spawn)) / 1e9);
      out += buf;
    }
    // A cold run must have compiled and a warm one hit the disk cache: else the phase is mislabelled.
    if (mode == "cold" && outcome != kjit::Outcome::compiled) keep("cold run did not compile (outcome " + std::string(kjit::to_string(outcome)) + ")");
    if (mode == "warm" && outcome != kjit::Outcome::hit) keep("warm run missed the disk cache (outcome " + std::string(kjit::to_string(outcome)) + ")");
    std::printf("%s,\"check\":%s}\n", out.c_str(), json_string(check).c_str());
    return 0;
  } catch (const std::exception& e) {
    std::printf("%s,\"error\":%s}\n", out.c_str(), json_string(e.what()).c_str());
    return 1;
  }
}
