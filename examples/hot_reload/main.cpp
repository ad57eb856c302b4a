// Hot reload: load a kernel by file name through kjit::KernelLoader with hot reload on, launch
// it in a loop and print its output. Edit the kernel file while this runs (the program prints
// its path) and the next iteration launches the kernel compiled from the new text.
//
//   hot_reload [--dir DIR] [--iterations N] [--interval-ms MS]
//
// DIR (default: a fresh folder under the temp dir, removed when the program ends, also by
// Ctrl-C) receives wave.cu and wave.cuh unless they exist. Without a GPU it compiles for sm_90 instead of launching and prints the cache key,
// which changes when the file does. Scriptable: e.g. `hot_reload --iterations 20 --interval-ms 200 &`
// then `sed -i 's/AMPLITUDE 1/AMPLITUDE 2/' DIR/wave.cuh`.
#include <kjit/kjit.hpp>
#include <kjit/loader.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

static const char* k_kernel = R"(// Edit me while hot_reload runs.
#include "wave.cuh"
extern "C" __global__ void wave(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = AMPLITUDE * (i % 4) + OFFSET;
}
)";
static const char* k_header = "#define AMPLITUDE 1\n#define OFFSET 0.5f\n";

// Ctrl-C (SIGINT) or SIGTERM: stop after the current iteration, so that the folder is removed.
static std::atomic<bool> g_stop{false};
static void request_stop(int) { g_stop = true; }

// The default folder, made by this run: removed (with the files written into it) however main returns.
struct OwnedFolder {
  std::filesystem::path path;
  ~OwnedFolder() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

static void write_if_missing(const std::filesystem::path& p, const char* text) {
  if (std::filesystem::exists(p)) return;
  std::ofstream(p) << text;
}

int main(int argc, char** argv) try {
  std::filesystem::path dir;
  int iterations = 30, interval_ms = 1000;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--dir" && i + 1 < argc) dir = argv[++i];
    else if (a == "--iterations" && i + 1 < argc) iterations = std::atoi(argv[++i]);
    else if (a == "--interval-ms" && i + 1 < argc) interval_ms = std::atoi(argv[++i]);
    else {
      const bool help = a == "--help" || a == "-h";  // asked for: stdout; a mistake: stderr
      std::fprintf(help ? stdout : stderr, "usage: hot_reload [--dir DIR] [--iterations N] [--interval-ms MS]\n");
      return help ? 0 : 2;
    }
  }
  OwnedFolder owned;
  if (dir.empty()) {
    dir = std::filesystem::temp_directory_path() / ("kjit-hot-reload-" + std::to_string(::getpid()));
    owned.path = dir;
  }
  std::filesystem::create_directories(dir);
  std::signal(SIGINT, request_stop);
  std::signal(SIGTERM, request_stop);
  write_if_missing(dir / "wave.cu", k_kernel);
  write_if_missing(dir / "wave.cuh", k_header);
  std::printf("edit %s or %s; %d iterations every %d ms\n", (dir / "wave.cu").c_str(), (dir / "wave.cuh").c_str(),
              iterations, interval_ms);
  std::fflush(stdout);

  kjit::KernelLoader loader({.folders = {dir}, .hot_reload = true});
  const bool gpu = kjit::driver_available() && kjit::device_count() > 0;
  for (int it = 0; it < iterations && !g_stop; ++it) {
    try {
      if (gpu) {
        auto wave = loader.kernel<void(float*, int)>("wave.cu", "wave");
        kjit::DeviceBuffer<float> out(8);
        wave({.grid = {1}, .block = {32}}, out.data(), 8);
        std::printf("%3d:", it);
        for (float v : out.to_host()) std::printf(" %g", v);
        std::printf("\n");
      } else {
        kjit::CompileResult r = loader.compile("wave.cu", "", kjit::Arch::sm(90));
        std::printf("%3d: no GPU; compiled for sm_90: key %s (%s)\n", it, r.key.c_str(),
                    std::string(kjit::to_string(r.outcome)).c_str());
      }
    } catch (const kjit::CompileError& e) {
      // A half-edited file: say so and keep going; the next save fixes it.
      std::printf("%3d: compile error, keeping the loop alive:\n%s\n", it, e.what());
    }
    std::fflush(stdout);
    // In steps, so that Ctrl-C ends the wait at once.
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(it + 1 < iterations ? interval_ms : 0);
    while (!g_stop && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "hot_reload: %s\n", e.what());
  return 1;
}
