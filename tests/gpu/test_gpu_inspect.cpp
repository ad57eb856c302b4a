// GPU tests of inspection: driver attributes in resource usage, SASS with the toolkit's tools.
#include "gpu/gpu_support.hpp"
#include "support/temp_dir.hpp"

#include <kjit/tools/inspect.hpp>

#include "support/helpers.hpp"

#include "tools/inspect/inspect_json.hpp"

#include <random>
#include <string>

TEST_SUITE("inspect") {
  TEST_CASE("resource usage takes max threads per block from the driver") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    const char* src = R"(
extern "C" __global__ void __launch_bounds__(256) bounded(float* x) { x[threadIdx.x] *= 3.0f; }
extern "C" __global__ void free_kernel(float* x) { x[threadIdx.x] += 1.0f; }
)";
    auto usage = kjit::test::resource_usage_of(rt, kjit::Program("bounded.cu", src), {});
    auto bounded = kjit::inspect::find_usage(usage, "bounded");
    auto free_kernel = kjit::inspect::find_usage(usage, "free_kernel");
    REQUIRE(bounded);
    REQUIRE(free_kernel);
    CHECK(bounded->max_threads_per_block == 256);
    CHECK(free_kernel->max_threads_per_block == 1024);
    CHECK(bounded->registers > 0);
  }

  TEST_CASE("what resource usage reads from the cubin is what the driver says: local memory and max threads") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    const std::string bound = std::to_string(32 * (1 + std::random_device{}() % 32));
    const std::string src = R"(
extern "C" __global__ void __launch_bounds__()" + bound + R"() bounded(float* x) { x[threadIdx.x] *= 3.0f; }
extern "C" __global__ void spill(const float* x, float* y, int n) {
  float acc[64];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  #pragma unroll
  for (int k = 0; k < 64; ++k) acc[k] = x[i + k * n];
  float s = 0;
  #pragma unroll
  for (int k = 0; k < 64; ++k) s += acc[k] * acc[63 - k] + acc[(k * 7) % 64];
  y[i] = s;
}
__device__ __noinline__ float framed(float* p, int n) {
  float loc[40];
  for (int i = 0; i < 40; ++i) loc[i] = p[i * n + 1];
  return loc[(n * 3) & 31] + loc[n & 7];
}
extern "C" __global__ void caller(float* p, int n) {
  float loc[16];
  for (int i = 0; i < 16; ++i) loc[i] = p[i + n];
  p[0] = framed(p, n) + loc[n & 15];
}
extern "C" __global__ void plain(float* x) { x[threadIdx.x] = 1.0f; }
)";
    const kjit::Device device = kjit::Device::current();
    for (const char* limit : {"", "--maxrregcount=32"}) {
      CAPTURE(limit);
      kjit::CompileOptions o{.arch = kjit::Arch::sm(device.compute_capability())};
      if (*limit) o.flags.push_back(limit);
      const kjit::CompileResult r = rt.compile(kjit::Program("cubin_usage.cu", src), kjit::inspect::with_resource_report(o));
      const auto usage = kjit::inspect::usage_from_result(r);  // the cubin only, no driver
      kjit::Module m = rt.load(kjit::Program("cubin_usage.cu", src), o);
      for (const char* name : {"bounded", "spill", "caller", "plain"}) {
        CAPTURE(name);
        const auto u = kjit::inspect::find_usage(usage, name);
        REQUIRE(u);
        const kjit::KernelAttributes a = m.attributes(name);
        CHECK(u->local == a.local_bytes);
        CHECK(u->max_threads_per_block == a.max_threads_per_block);
        CHECK(u->registers == a.registers);
      }
    }
  }

  TEST_CASE("a repeated compile still carries ptxas's report where NVRTC could serve it from its own cache") {
    // With a driver installed, NVRTC 12.9+ caches compiles in the driver's compute cache and on
    // its hits ptxas does not run: the second compile's log would have no report.
    KJIT_REQUIRE_GPU();
    kjit::Runtime rt(kjit::RuntimeConfig{.cache_disabled = true});
    const std::string src = "extern \"C\" __global__ void scaled(float* x) { x[threadIdx.x] *= " +
                            std::to_string(std::random_device{}() % 100000) + ".5f; }";
    for (int round = 0; round < 3; ++round) {
      CAPTURE(round);
      auto r = rt.compile(kjit::Program("scaled.cu", src), kjit::CompileOptions{.flags = {"-Xptxas=-v"}});
      CHECK(r.outcome == kjit::Outcome::compiled);
      CHECK(r.log.find("Compiling entry function 'scaled'") != std::string::npos);
    }
  }

  TEST_CASE("SASS of a real cubin when the toolkit's disassembler is there") {
    KJIT_REQUIRE_GPU();
    if (!kjit::inspect::find_disassembler()) KJIT_SKIP(kjit::inspect::disassembler_unavailable_reason());
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    auto r = rt.compile(kjit::Program("mul.cu", "extern \"C\" __global__ void mul(float* x) { x[threadIdx.x] *= 3.0f; }"),
                        {});
    std::string sass = kjit::inspect::sass(r, "mul");
    CHECK(sass.find("FMUL") != std::string::npos);
    CHECK(sass.find("EXIT") != std::string::npos);
  }
}
