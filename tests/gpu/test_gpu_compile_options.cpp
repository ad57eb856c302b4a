// GPU tests (label gpu) of CompileOptions' fields on one Runtime: a request that differs in one
// field only is another module (the in-process registry keys every field of the table).
#include "gpu/gpu_support.hpp"

#include "support/temp_dir.hpp"

namespace {

const char* k_pi_src = R"(
extern "C" __global__ void pi(float* out, float scale) { out[threadIdx.x] = scale * (float)M_PI; }
)";

const char* k_plain_src = R"(
extern "C" __global__ void twice(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}
)";

}  // namespace

TEST_SUITE("compile_options") {
  TEST_CASE("nvcc_environment off on the Runtime that loaded it on refuses M_PI without an include") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    const kjit::Program p("pi.cu", k_pi_src);
    kjit::Module with = rt.load(p, {});
    const float scale = kjit::test::random_floats(1, 7)[0];
    kjit::DeviceBuffer<float> out(32);
    out.fill_bytes(0xFF);
    with.kernel<void(float*, float)>("pi")({.grid = {1}, .block = {32}}, out.data(), scale);
    for (float v : out.to_host()) CHECK(v == doctest::Approx(scale * 3.14159265f).epsilon(1e-6));
    // The same program without the nvcc environment is another request: NVRTC sees no M_PI.
    CHECK_THROWS_AS(rt.load(p, {.nvcc_environment = false}), kjit::CompileError);
    // And a fresh Runtime agrees (the registry is not what decides).
    kjit::Runtime fresh(kjit::test::quiet_config(dir.path()));
    CHECK_THROWS_AS(fresh.load(p, {.nvcc_environment = false}), kjit::CompileError);
  }

  TEST_CASE("each field flipped on one Runtime gives its own module") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    const kjit::Program p("twice.cu", k_plain_src);
    kjit::Module base = rt.load(p, {});
    std::set<std::string> keys{base.compile_result().key};
    for (const auto& row : kjit::compile_option_fields()) {
      if (row.kind == kjit::CompileOptionKind::arch) continue;  // native is the only arch this device loads
      INFO(row.name);
      kjit::CompileOptions o;
      switch (row.kind) {
      case kjit::CompileOptionKind::flag: kjit::set_compile_option(o, row.name, row.example == "true"); break;
      case kjit::CompileOptionKind::count: kjit::set_compile_option(o, row.name, std::stoi(std::string(row.example))); break;
      case kjit::CompileOptionKind::text: kjit::set_compile_option(o, row.name, std::string(row.example)); break;
      default: kjit::set_compile_option(o, row.name, std::vector<std::string>{std::string(row.example)}); break;
      }
      kjit::Module m = rt.load(p, o);
      CHECK_FALSE(m.shares_code_with(base));
      CHECK(keys.insert(m.compile_result().key).second);
      auto x = kjit::test::random_floats(1000, 11);
      kjit::DeviceBuffer<float> dx{std::span<const float>(x)};
      m.kernel<void(float*, int)>("twice")({.grid = {4}, .block = {256}}, dx.data(), 1000);
      const auto y = dx.to_host();
      for (std::size_t i = 0; i < x.size(); ++i) CHECK(y[i] == 2.0f * x[i]);
    }
  }
}
