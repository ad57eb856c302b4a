// The lecture example kjit grew from: square a matrix on a 2-D grid of 16x16 blocks.
// With a GPU: compiles (or hits the cache), launches, prints [[1, 4, 9], [16, 25, 36]].
// Without one: compiles for sm_90 all the same, says where the PTX is and why the launch was skipped.
#include <kjit/kjit.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

static const char* k_source = R"(
extern "C" __global__ void square_matrix_kernel(const float* matrix, float* result, int width, int height) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < height && col < width) {
    int idx = row * width + col;
    result[idx] = matrix[idx] * matrix[idx];
  }
}
)";

static void print_matrix(const std::vector<float>& m, int width, int height) {
  std::printf("[");
  for (int r = 0; r < height; ++r) {
    std::printf("%s[", r ? ", " : "");
    for (int c = 0; c < width; ++c) std::printf("%s%g", c ? ", " : "", m[static_cast<std::size_t>(r * width + c)]);
    std::printf("]");
  }
  std::printf("]\n");
}

int main() try {
  const int width = 3, height = 2;
  const std::vector<float> input = {1, 2, 3, 4, 5, 6};

  if (!kjit::driver_available()) {
    // Compiling needs no GPU: build for a named arch and show where the PTX went.
    kjit::CompileResult r = kjit::Runtime::global().compile(
        kjit::Program("square_matrix_extension.cu", k_source), kjit::CompileOptions{.arch = kjit::Arch::sm(90)});
    auto dir = std::filesystem::temp_directory_path() / "kjit-examples";
    std::filesystem::create_directories(dir);
    auto ptx_path = dir / "square_matrix_extension.ptx";
    std::ofstream(ptx_path) << r.ptx;
    std::printf("compiled square_matrix_kernel for %s (%s, key %s); cache: %s\n", r.arch.str().c_str(),
                std::string(kjit::to_string(r.outcome)).c_str(), r.key.c_str(),
                kjit::Runtime::global().cache_dir().c_str());
    std::printf("PTX: %s\n", ptx_path.c_str());
    std::printf("launch skipped: %s\n", kjit::driver_unavailable_reason().c_str());
    return 0;
  }

  kjit::Module m = kjit::load_inline({
      .name = "square_matrix_extension",
      .cuda_sources = k_source,
      .functions = {"square_matrix_kernel"},
      .extra_cuda_cflags = {"-O2"},
  });
  auto square = m.kernel<void(const float*, float*, int, int)>("square_matrix_kernel");

  kjit::DeviceBuffer<float> in{std::span<const float>(input)};
  kjit::DeviceBuffer<float> out(input.size());
  out.fill_bytes(0xFF);  // poison: an unwritten element would print as nan
  square.launch({.grid = {kjit::ceil_div(width, 16), kjit::ceil_div(height, 16)}, .block = {16, 16}}, in.data(),
                out.data(), width, height);
  print_matrix(out.to_host(), width, height);
  return 0;
} catch (const kjit::Error& e) {
  std::fprintf(stderr, "square: %s\n", e.what());
  return 1;
}
