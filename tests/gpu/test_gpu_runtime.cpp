// GPU tests (label gpu): load, typed launch, argument checks, attributes, occupancy, large
// dynamic shared memory, launch limits, threads, several GPUs, load_inline and the example.
#include "gpu/gpu_support.hpp"

#include <kjit/tools.hpp>
#include "support/temp_dir.hpp"

#include <atomic>
#include <cstdlib>
#include <thread>

namespace {

const char* k_square_src = R"(
extern "C" __global__ void square_matrix_kernel(const float* matrix, float* result, int width, int height) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < height && col < width) {
    int idx = row * width + col;
    result[idx] = matrix[idx] * matrix[idx];
  }
}
)";

const char* k_many_src = R"(
struct Pair { float a; double b; };
extern "C" __global__ void axpby(float a, const float* x, float b, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + b * y[i];
}
extern "C" __global__ void eight(float* out, int a, long long b, float c, double d, char e, Pair p, unsigned short f) {
  out[0] = a + (float)b + c + (float)d + e + p.a + (float)p.b + f;
}
extern "C" __global__ void big_shared(const float* x, float* out, int n) {
  extern __shared__ float tile[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) tile[i] = x[i];
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = tile[n - 1 - i] + 1.0f;
}
template <typename T> __global__ void scale(T* x, T a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
)";

struct Pair {
  float a;
  double b;
};

}  // namespace

TEST_SUITE("Runtime") {
  TEST_CASE("square: the lecture example squares a 2x3 matrix") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    auto m = kjit::load_inline({.name = "square_matrix_extension", .cuda_sources = k_square_src,
                                .functions = {"square_matrix_kernel"}, .extra_cuda_cflags = {"-O2"},
                                .build_directory = dir.path()});
    auto square = m.kernel<void(const float*, float*, int, int)>("square_matrix_kernel");
    std::vector<float> in = {1, 2, 3, 4, 5, 6};
    kjit::DeviceBuffer<float> din{std::span<const float>(in)};
    kjit::DeviceBuffer<float> dout(6);
    dout.fill_bytes(0xFF);
    square.launch({.grid = {1, 1}, .block = {16, 16}}, din.data(), dout.data(), 3, 2);
    CHECK(dout.to_host() == std::vector<float>{1, 4, 9, 16, 25, 36});
  }

  TEST_CASE("typed launch on random inputs over a large 2-D grid and output poisoned first") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    auto m = rt.load(kjit::Program("square.cu", k_square_src));
    auto square = m.kernel<void(const float*, float*, int, int)>("square_matrix_kernel");
    const int w = 1037, h = 517;  // not multiples of 16: the bounds check matters
    auto in = kjit::test::random_floats(static_cast<std::size_t>(w) * h, 1);
    kjit::DeviceBuffer<float> din{std::span<const float>(in)};
    kjit::DeviceBuffer<float> dout(in.size());
    dout.fill_bytes(0xFF);
    square({.grid = {kjit::ceil_div(w, 16), kjit::ceil_div(h, 16)}, .block = {16, 16}}, din.data(), dout.data(), w, h);
    auto out = dout.to_host();
    std::size_t bad = 0;
    for (std::size_t i = 0; i < in.size(); ++i) bad += out[i] != in[i] * in[i];
    CHECK(bad == 0);
  }

  TEST_CASE("scalars convert to the declared types and eight parameters of mixed sizes arrive intact") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    auto m = rt.load(kjit::Program("many.cu", k_many_src).instantiate("scale<float>"));
    auto axpby = m.kernel<void(float, const float*, float, const float*, float*, int)>("axpby");
    const int n = 100003;
    auto x = kjit::test::random_floats(n, 2), y = kjit::test::random_floats(n, 3);
    kjit::DeviceBuffer<float> dx{std::span<const float>(x)}, dy{std::span<const float>(y)}, dout(n);
    dout.fill_bytes(0xFF);
    axpby({.grid = {kjit::ceil_div(n, 256)}, .block = {256}}, 2.5, dx.data(), -1, dy.data(), dout.data(), n);
    auto out = dout.to_host();
    std::size_t bad = 0;
    for (int i = 0; i < n; ++i) bad += std::fabs(out[i] - (2.5f * x[i] - y[i])) > 1e-5f * (1 + std::fabs(out[i]));
    CHECK(bad == 0);

    auto eight = m.kernel<void(float*, int, long long, float, double, char, Pair, unsigned short)>("eight");
    kjit::DeviceBuffer<float> one(1);
    one.fill_bytes(0xFF);
    eight({.grid = {1}, .block = {1}}, one.data(), 1, 2LL, 3.0f, 4.0, char(5), Pair{6.0f, 7.0}, static_cast<unsigned short>(8));
    CHECK(one.to_host()[0] == 36.0f);

    auto scale = m.kernel<void(float*, float, int)>("scale<float>");
    kjit::DeviceBuffer<float> s{std::span<const float>(x)};
    scale({.grid = {kjit::ceil_div(n, 128)}, .block = {128}}, s.data(), 3.0f, n);
    auto scaled = s.to_host();
    CHECK(scaled[17] == x[17] * 3.0f);
  }

  TEST_CASE("a wrong argument count or size fails before any launch with both signatures") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    auto m = rt.load(kjit::Program("square.cu", k_square_src));
    CHECK_THROWS_WITH_AS((m.kernel<void(const float*, float*, int)>("square_matrix_kernel")),
                         doctest::Contains("declared 3 parameters"), kjit::UsageError);
    CHECK_THROWS_WITH_AS((m.kernel<void(const float*, float*, int, double)>("square_matrix_kernel")),
                         doctest::Contains("[8 B], [8 B], [4 B], [4 B]"), kjit::UsageError);
    CHECK_THROWS_WITH_AS((m.kernel<void(const float*, float*, int, int)>("no_such_kernel")),
                         doctest::Contains("square_matrix_kernel"), kjit::UsageError);
  }

  TEST_CASE("attributes and occupancy") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    auto m = rt.load(kjit::Program("square.cu", k_square_src));
    auto k = m.kernel<void(const float*, float*, int, int)>("square_matrix_kernel");
    auto a = k.attributes();
    CHECK(a.registers > 0);
    CHECK(a.registers < 64);
    CHECK(a.max_threads_per_block == 1024);
    CHECK(a.local_bytes == 0);
    CHECK(a.binary_version == kjit::Device::current().compute_capability());
    CHECK(k.max_active_blocks_per_sm(256) >= 1);
    int b = k.suggested_block_size();
    CHECK(b >= 32);
    CHECK(b <= 1024);
    CHECK(m.kernel_names() == std::vector<std::string>{"square_matrix_kernel"});
  }

  TEST_CASE("more than 48 KB of dynamic shared memory sets the attribute by itself") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    auto m = rt.load(kjit::Program("many.cu", k_many_src));
    auto k = m.kernel<void(const float*, float*, int)>("big_shared");
    const int n = 40000;  // 160,000 bytes of shared memory
    auto x = kjit::test::random_floats(n, 4);
    kjit::DeviceBuffer<float> dx{std::span<const float>(x)}, dout(n);
    dout.fill_bytes(0xFF);
    k({.grid = {1}, .block = {1024}, .shared_mem = n * sizeof(float)}, dx.data(), dout.data(), n);
    auto out = dout.to_host();
    std::size_t bad = 0;
    for (int i = 0; i < n; ++i) bad += out[i] != x[n - 1 - i] + 1.0f;
    CHECK(bad == 0);
    CHECK(k.attributes().max_dynamic_shared_bytes >= n * sizeof(float));
  }

  TEST_CASE("over the device limits: a 2048-thread block and too much shared memory") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    auto m = rt.load(kjit::Program("many.cu", k_many_src));
    auto k = m.kernel<void(const float*, float*, int)>("big_shared");
    kjit::DeviceBuffer<float> d(16);
    CHECK_THROWS_WITH_AS(k({.grid = {1}, .block = {2048}}, d.data(), d.data(), 16),
                         doctest::Contains("allows at most 1024"), kjit::CudaError);
    CHECK_THROWS_WITH_AS(k({.grid = {1}, .block = {32}, .shared_mem = 4u << 20}, d.data(), d.data(), 16),
                         doctest::Contains("allows at most"), kjit::CudaError);
    // The kernel still works afterwards.
    k({.grid = {1}, .block = {32}, .shared_mem = 64}, d.data(), d.data(), 16);
    kjit::Device::current().synchronize();
  }

  TEST_CASE("two threads loading the same kernel compile once and share the module") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    std::vector<kjit::Module> modules(2);
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
      threads.emplace_back([&, t] { modules[static_cast<std::size_t>(t)] = rt.load(kjit::Program("square.cu", k_square_src)); });
    }
    for (auto& t : threads) t.join();
    CHECK(rt.stats().compiles == 1);
    CHECK(modules[0].compile_result().key == modules[1].compile_result().key);
    // Each thread can launch: the context is made current for it.
    std::thread other([&] {
      auto k = modules[1].kernel<void(const float*, float*, int, int)>("square_matrix_kernel");
      std::vector<float> in = {3};
      kjit::DeviceBuffer<float> d{std::span<const float>(in)};
      k({.grid = {1}, .block = {1}}, d.data(), d.data(), 1, 1);
      CHECK(d.to_host()[0] == 9.0f);
    });
    other.join();
    // A repeated request is a registry hit.
    auto before = rt.stats().registry_hits;
    rt.load(kjit::Program("square.cu", k_square_src));
    CHECK(rt.stats().registry_hits == before + 1);
  }

  TEST_CASE("a module on each GPU") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    for (int d = 0; d < kjit::device_count(); ++d) {
      auto dev = kjit::Device::get(d);
      auto m = rt.load(kjit::Program("square.cu", k_square_src), {}, dev);
      CHECK(m.device() == dev);
      auto k = m.kernel<void(const float*, float*, int, int)>("square_matrix_kernel");
      auto in = kjit::test::random_floats(64, 10 + static_cast<unsigned>(d));
      kjit::DeviceBuffer<float> din(std::span<const float>(in), dev), dout(64, dev);
      dout.fill_bytes(0xFF);
      k({.grid = {4}, .block = {16}}, din.data(), dout.data(), 64, 1);
      auto out = dout.to_host();
      for (int i = 0; i < 64; ++i) CHECK(out[static_cast<std::size_t>(i)] == in[static_cast<std::size_t>(i)] * in[static_cast<std::size_t>(i)]);
    }
    MESSAGE("devices: " << kjit::device_count());
  }

  TEST_CASE("load_inline checks that the named functions exist") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    CHECK_THROWS_WITH_AS(kjit::load_inline({.name = "sq", .cuda_sources = k_square_src, .functions = {"sqaure"},
                                            .build_directory = dir.path()}),
                         doctest::Contains("square_matrix_kernel"), kjit::UsageError);
  }

  TEST_CASE("load_inline again returns the same module and any changed field misses") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    const kjit::LoadInlineOptions o{.name = "again", .cuda_sources = k_square_src,
                                    .functions = {"square_matrix_kernel"}, .extra_cuda_cflags = {"-O2"},
                                    .build_directory = dir.path()};
    auto first = kjit::load_inline(o);
    auto again = kjit::load_inline(o);
    CHECK(&again.compile_result() == &first.compile_result());  // one loaded module, shared
    auto flags = o;
    flags.extra_cuda_cflags = {"-O2", "-DSALT=1"};
    CHECK(kjit::load_inline(flags).compile_result().key != first.compile_result().key);
    auto source = o;
    source.cuda_sources += "\n// another source\n";
    CHECK(kjit::load_inline(source).compile_result().key != first.compile_result().key);
    auto name = o;
    name.name = "again2";
    CHECK(kjit::load_inline(name).compile_result().key != first.compile_result().key);
    // The function list is part of the call: a missing name throws every time, after a good call.
    auto missing = o;
    missing.functions.push_back("no_such_kernel");
    for (int i = 0; i < 2; ++i) {
      CHECK_THROWS_WITH_AS(kjit::load_inline(missing), doctest::Contains("no_such_kernel"), kjit::UsageError);
    }
    // And the result still launches correctly.
    auto square = kjit::load_inline(o).kernel<void(const float*, float*, int, int)>("square_matrix_kernel");
    auto in = kjit::test::random_floats(64, 3);
    kjit::DeviceBuffer<float> din{std::span<const float>(in)}, dout(64);
    dout.fill_bytes(0xFF);
    square.launch({.grid = {1, 1}, .block = {16, 16}}, din.data(), dout.data(), 8, 8);
    auto out = dout.to_host();
    for (std::size_t i = 0; i < 64; ++i) CHECK(out[i] == in[i] * in[i]);
  }

  TEST_CASE("a disk hit loads the cached cubin in a fresh Runtime") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    { kjit::Runtime(kjit::test::quiet_config(dir.path())).load(kjit::Program("square.cu", k_square_src)); }
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    auto m = rt.load(kjit::Program("square.cu", k_square_src));
    CHECK(m.compile_result().outcome == kjit::Outcome::hit);
    CHECK(rt.stats().compiles == 0);
    auto k = m.kernel<void(const float*, float*, int, int)>("square_matrix_kernel");
    std::vector<float> in = {-4};
    kjit::DeviceBuffer<float> d{std::span<const float>(in)};
    k({.grid = {1}, .block = {1}}, d.data(), d.data(), 1, 1);
    CHECK(d.to_host()[0] == 16.0f);
  }

  // The native arch is guessed from the device: the guess's lookup counts nothing of its own; the
  // request is one miss and one compile, then one disk hit, then a registry hit (#29 item 4).
  TEST_CASE("a guessed-arch miss counts one miss and one compile and the next requests one hit each") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    const kjit::Program p("guessed.cu", k_square_src);
    {
      kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
      CHECK(rt.load(p).compile_result().outcome == kjit::Outcome::compiled);
      const kjit::RuntimeStats s = rt.stats();
      CHECK(s.misses == 1);
      CHECK(s.compiles == 1);
      CHECK(s.disk_hits == 0);
      CHECK(s.registry_hits == 0);
      rt.load(p);
      CHECK(rt.stats().registry_hits == 1);
      CHECK(rt.stats().misses == 1);
    }
    {
      kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
      CHECK(rt.load(p).compile_result().outcome == kjit::Outcome::hit);
      const kjit::RuntimeStats s = rt.stats();
      CHECK(s.disk_hits == 1);
      CHECK(s.misses == 0);
      CHECK(s.compiles == 0);
    }  // a disk hit queues no flush: the counters reach the folder when the Runtime goes
    const kjit::CacheStats total = kjit::Cache(dir.path()).stats();
    CHECK(total.hits == 1);
    CHECK(total.misses == 1);
    CHECK(total.compiles == 1);
  }
}

#include "core/driver/driver_api.hpp"

TEST_SUITE("ContextGuard") {
  TEST_CASE("a launch after someone else changed the current context switches back and succeeds") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    auto m = rt.load(kjit::Program("square.cu", k_square_src));
    auto k = m.kernel<void(const float*, float*, int, int)>("square_matrix_kernel");
    std::vector<float> in = {5};
    kjit::DeviceBuffer<float> d{std::span<const float>(in)};
    k({.grid = {1}, .block = {1}}, d.data(), d.data(), 1, 1);
    // Behind kjit's back: no context current at all.
    REQUIRE(kjit::driver::get().cuCtxSetCurrent(nullptr) == CUDA_SUCCESS);
    k({.grid = {1}, .block = {1}}, d.data(), d.data(), 1, 1);
    CHECK(d.to_host()[0] == 625.0f);
  }
}

TEST_SUITE("launch") {
  TEST_CASE("PTX for a virtual arch loads through the driver JIT") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    auto m = rt.load(kjit::Program("square.cu", k_square_src), {.arch = kjit::Arch::compute(80)});
    CHECK_FALSE(m.compile_result().has_cubin());
    auto k = m.kernel<void(const float*, float*, int, int)>("square_matrix_kernel");
    std::vector<float> in = {1.5f};
    kjit::DeviceBuffer<float> d{std::span<const float>(in)};
    k({.grid = {1}, .block = {1}}, d.data(), d.data(), 1, 1);
    CHECK(d.to_host()[0] == 2.25f);
  }

  TEST_CASE("cluster dims and cooperative launches go through cuLaunchKernelEx") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    auto m = rt.load(kjit::Program("many.cu", k_many_src));
    auto axpby = m.kernel<void(float, const float*, float, const float*, float*, int)>("axpby");
    const int n = 4096;
    auto x = kjit::test::random_floats(n, 21), y = kjit::test::random_floats(n, 22);
    kjit::DeviceBuffer<float> dx{std::span<const float>(x)}, dy{std::span<const float>(y)}, dout(n);
    if (kjit::Device::current().compute_capability() >= 90) {
      dout.fill_bytes(0xFF);
      axpby({.grid = {16}, .block = {256}, .cluster = {2, 1, 1}}, 1.0f, dx.data(), 1.0f, dy.data(), dout.data(), n);
      auto out = dout.to_host();
      CHECK(out[n - 1] == x[n - 1] + y[n - 1]);
    }
    dout.fill_bytes(0xFF);
    axpby({.grid = {16}, .block = {256}, .cooperative = true}, 1.0f, dx.data(), 2.0f, dy.data(), dout.data(), n);
    auto out = dout.to_host();
    CHECK(out[7] == x[7] + 2.0f * y[7]);
  }
}

#include "core/driver/cubin_info.hpp"
#include "support/random_signatures.hpp"

TEST_SUITE("cubin_info") {
  TEST_CASE("parameter sizes read from the cubin equal the driver's for random signatures") {
    // kjit reads kernel parameter sizes from the cubin's .nv.info (runtime/cubin_info.hpp) instead
    // of asking the driver; here both must agree with each other and with the declared types.
    KJIT_REQUIRE_GPU();
    const auto& api = kjit::driver::get();
    kjit::Device dev = kjit::Device::get(0);
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    for (unsigned seed : {21u, 22u, 23u}) {
      auto sigs = kjit::test::random_signatures(seed, 24);
      auto m = rt.load(sigs.program("random_sigs.cu"), {}, dev);
      const auto& r = m.compile_result();
      REQUIRE(r.has_cubin());
      CUmodule mod = nullptr;
      REQUIRE(api.cuModuleLoadData(&mod, r.cubin.data()) == CUDA_SUCCESS);
      for (const auto& k : sigs.kernels) {
        CAPTURE(k.name);
        const std::string symbol = r.lowered_name(k.name).value_or(k.name);
        CUfunction f = nullptr;
        REQUIRE(api.cuModuleGetFunction(&f, mod, symbol.c_str()) == CUDA_SUCCESS);
        std::vector<std::size_t> from_driver;
        for (std::size_t i = 0;; ++i) {
          std::size_t offset = 0, size = 0;
          if (api.cuFuncGetParamInfo(f, i, &offset, &size) != CUDA_SUCCESS) break;
          from_driver.push_back(size);
        }
        auto from_cubin = kjit::driver::cubin_param_sizes(r.cubin, symbol);
        REQUIRE(from_cubin.has_value());
        CHECK(*from_cubin == from_driver);
        CHECK(from_driver == k.sizes);
      }
      api.cuModuleUnload(mod);
    }
  }
}
