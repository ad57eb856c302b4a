// kjit::Profiler on a real GPU: the four shipped kernels and a kernel launched through the driver
// API outside kjit, each with its call count; GPU totals against CUDA events around the same
// launches; a compile, a disk hit and a registry hit as phases; a bound that drops the oldest
// records; one Profiler at a time; `kjit profile` on a program without kjit (table and trace)
// and on one with kjit (its phases through the shared libkjit).
#include "gpu/gpu_support.hpp"
#include "support/temp_dir.hpp"

#include "core/driver/driver_api.hpp"
#include "tools/profile/cupti_library.hpp"

#include <kjit/kernels.hpp>
#include <kjit/tools/profile.hpp>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <sstream>

namespace {

// An extern "C" kernel loaded and launched with the driver API alone: kjit never sees it.
const char* k_raw_ptx = R"(
.version 8.0
.target sm_75
.address_size 64
.visible .entry raw_scale(.param .u64 py, .param .f32 pa, .param .u32 pn) {
  .reg .pred %p;
  .reg .b32 %r<6>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [py];
  ld.param.f32 %f1, [pa];
  ld.param.u32 %r1, [pn];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p, %r5, %r1;
  @%p bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r5, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.f32 %f2, [%rd4];
  mul.f32 %f2, %f2, %f1;
  st.global.f32 [%rd4], %f2;
DONE:
  ret;
}
)";

const kjit::ProfileKernelRow* row(const kjit::ProfileSummary& s, const std::string& name) {
  auto it = std::find_if(s.kernels.begin(), s.kernels.end(), [&](const auto& r) { return r.name == name; });
  return it == s.kernels.end() ? nullptr : &*it;
}

const kjit::ProfilePhaseRow* phase(const kjit::ProfileSummary& s, const std::string& name) {
  auto it = std::find_if(s.phases.begin(), s.phases.end(), [&](const auto& r) { return r.phase == name; });
  return it == s.phases.end() ? nullptr : &*it;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::string k_kjit = std::string(KJIT_BINARY_DIR) + "/cli/kjit";

// Under a tool that holds CUPTI itself (compute-sanitizer, Nsight) kjit's profiler cannot record:
// it says so, and the test counts as skipped (the tool still checks what ran).
// The reason to skip (the profiler's message), or nothing.
std::optional<std::string> another_tool_holds_cupti(const kjit::Profiler& p) {
  if (p.active() || p.message().find("another profiler") == std::string::npos) return std::nullopt;
  return p.message();
}

void CUPTIAPI ignore_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

}  // namespace

TEST_SUITE("profile") {
  TEST_CASE("profile: the shipped kernels and a driver-launched kernel appear with their call counts") {
    KJIT_REQUIRE_GPU();
    kjit::kernels::Kernels<float> kernels;
    const auto& api = kjit::driver::get();
    kjit::Device::current().make_current();
    CUmodule raw_module = nullptr;
    REQUIRE(api.cuModuleLoadData(&raw_module, k_raw_ptx) == CUDA_SUCCESS);
    CUfunction raw = nullptr;
    REQUIRE(api.cuModuleGetFunction(&raw, raw_module, "raw_scale") == CUDA_SUCCESS);

    const int rows = 64, cols = 1024;
    const std::size_t n = static_cast<std::size_t>(rows) * cols;
    auto host = kjit::test::random_floats(n, 17);
    kjit::DeviceBuffer<float> x{std::span<const float>(host)}, y(n);
    kjit::DeviceBuffer<float> mean_out(1);
    y.fill_bytes(0xFF);
    // Softmax and mean tune on a shape's first call (timing runs of their candidates): decided
    // before the profile, so that it counts the calls below alone.
    kernels.softmax(x.data(), y.data(), rows, cols);
    kernels.mean(x.data(), n, mean_out.data());
    kjit::Device::current().synchronize();

    kjit::Profiler p;
    const std::optional<std::string> skip = another_tool_holds_cupti(p);
    REQUIRE_MESSAGE((p.active() || skip), p.message());
    std::mt19937 gen(3);
    const int squares = 3 + static_cast<int>(gen() % 4), gelus = 5 + static_cast<int>(gen() % 4),
              softmaxes = 7 + static_cast<int>(gen() % 4), means = 2 + static_cast<int>(gen() % 4),
              raws = 11 + static_cast<int>(gen() % 4);
    {
      auto range = kjit::Profiler::range("the test's launches");
      for (int i = 0; i < squares; ++i) kernels.square(x.data(), y.data(), n);
      for (int i = 0; i < gelus; ++i) kernels.gelu(x.data(), y.data(), n);
      for (int i = 0; i < softmaxes; ++i) kernels.softmax(x.data(), y.data(), rows, cols);
      for (int i = 0; i < means; ++i) kernels.mean(x.data(), n, mean_out.data());
      CUdeviceptr dy = reinterpret_cast<CUdeviceptr>(y.data());
      float a = 1.5f;
      unsigned count = static_cast<unsigned>(n);
      void* params[] = {&dy, &a, &count};
      for (int i = 0; i < raws; ++i) {
        REQUIRE(api.cuLaunchKernel(raw, static_cast<unsigned>(n / 256), 1, 1, 256, 1, 1, 0, nullptr, params, nullptr) ==
                CUDA_SUCCESS);
      }
      kjit::Device::current().synchronize();
    }
    p.stop();
    if (skip) {
      api.cuModuleUnload(raw_module);
      KJIT_SKIP(*skip);
    }
    const auto s = p.summary();
    INFO(p.table());
    REQUIRE(s.recorded);
    const auto* square = row(s, kernels.square_kernel_name());
    auto softmax_it = std::find_if(s.kernels.begin(), s.kernels.end(),
                                   [](auto& r) { return r.name.find("softmax") != std::string::npos; });
    const auto* softmax = softmax_it == s.kernels.end() ? nullptr : &*softmax_it;  // the tuner's choice
    const auto* mean = row(s, kernels.mean_kernel_name());
    const auto* raw_row = row(s, "raw_scale");
    auto gelu = std::find_if(s.kernels.begin(), s.kernels.end(), [](auto& r) { return r.name.find("gelu") != std::string::npos; });
    REQUIRE(square != nullptr);
    REQUIRE(softmax != nullptr);
    REQUIRE(mean != nullptr);
    REQUIRE(raw_row != nullptr);
    REQUIRE(gelu != s.kernels.end());
    CHECK(square->calls == static_cast<std::uint64_t>(squares));
    CHECK(gelu->calls == static_cast<std::uint64_t>(gelus));
    CHECK(softmax->calls == static_cast<std::uint64_t>(softmaxes));
    CHECK(mean->calls == static_cast<std::uint64_t>(means));
    CHECK(raw_row->calls == static_cast<std::uint64_t>(raws));
    CHECK(square->program == "square.cu");
    CHECK(raw_row->program.empty());
    CHECK(s.kernel_count == static_cast<std::uint64_t>(squares + gelus + softmaxes + means + raws));
    for (const auto& r : s.kernels) {
      CHECK(r.gpu_total_us > 0);
      CHECK(r.host_enqueue_total_us > 0);  // each launch call was seen
    }
    const auto* enqueue = phase(s, "launch enqueue");
    REQUIRE(enqueue != nullptr);
    CHECK(enqueue->count == s.kernel_count);
    const auto* user = phase(s, "the test's launches");
    REQUIRE(user != nullptr);
    CHECK(user->count == 1);
    // Transfers: the fill is a memset; nothing was copied during the profile.
    CHECK(s.dropped == 0);

    // The trace: one kernel event and one flow per launch.
    const auto trace = nlohmann::json::parse(p.chrome_trace());
    int kernel_events = 0, flow_starts = 0, flow_ends = 0;
    for (const auto& e : trace["traceEvents"]) {
      if (e["ph"] == "X" && e["cat"] == "kernel") ++kernel_events;
      if (e["ph"] == "s") ++flow_starts;
      if (e["ph"] == "f") ++flow_ends;
    }
    CHECK(kernel_events == static_cast<int>(s.kernel_count));
    CHECK(flow_starts == static_cast<int>(s.kernel_count));
    CHECK(flow_ends == static_cast<int>(s.kernel_count));
    api.cuModuleUnload(raw_module);
  }

  TEST_CASE("profile: GPU totals agree with CUDA events around the same launches") {
    KJIT_REQUIRE_GPU();
    kjit::kernels::Kernels<float> kernels;
    const std::size_t n = std::size_t{1} << 24;
    auto host = kjit::test::random_floats(n, 5);
    kjit::DeviceBuffer<float> x{std::span<const float>(host)}, y(n);
    kernels.square(x.data(), y.data(), n);  // warm
    kjit::Device::current().synchronize();
    const auto& api = kjit::driver::get();
    CUevent before = nullptr, after = nullptr;
    REQUIRE(api.cuEventCreate(&before, 0) == CUDA_SUCCESS);
    REQUIRE(api.cuEventCreate(&after, 0) == CUDA_SUCCESS);
    kjit::Profiler p;
    if (auto why = another_tool_holds_cupti(p)) KJIT_SKIP(*why);
    REQUIRE_MESSAGE(p.active(), p.message());
    // CUPTI sets itself up on the first launch it sees (milliseconds): not inside the events.
    kernels.square(x.data(), y.data(), n);
    kjit::Device::current().synchronize();
    const int launches = 20;
    REQUIRE(api.cuEventRecord(before, nullptr) == CUDA_SUCCESS);
    for (int i = 0; i < launches; ++i) kernels.square(x.data(), y.data(), n);
    REQUIRE(api.cuEventRecord(after, nullptr) == CUDA_SUCCESS);
    REQUIRE(api.cuEventSynchronize(after) == CUDA_SUCCESS);
    float event_ms = 0;
    REQUIRE(api.cuEventElapsedTime(&event_ms, before, after) == CUDA_SUCCESS);
    p.stop();
    const auto s = p.summary();
    const auto* square = row(s, kernels.square_kernel_name());
    REQUIRE(square != nullptr);
    CHECK(square->calls == launches + 1);
    const double one_us = square->gpu_total_us / (launches + 1);
    // One stream: the kernels ran one after another inside the events' span, with little between.
    const double profiled_ms = one_us * launches / 1e3;
    INFO("profiler " << profiled_ms << " ms, events " << event_ms << " ms");
    CHECK(profiled_ms <= event_ms * 1.02);
    CHECK(profiled_ms >= event_ms * 0.80);
    api.cuEventDestroy(before);
    api.cuEventDestroy(after);
    auto out = y.to_host();
    for (std::size_t i = 0; i < n; i += 4099) CHECK(out[i] == host[i] * host[i]);
  }

  TEST_CASE("profile: a compile and a disk hit and a registry hit appear as phases") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    std::mt19937 gen(std::random_device{}());
    const std::string source = fmt::format(R"(
extern "C" __global__ void add_constant(float* y, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += {}.0f;
}}
)", gen() % 100000 + 1);
    const kjit::Program program("phases.cu", source);
    kjit::Profiler p;
    if (auto why = another_tool_holds_cupti(p)) KJIT_SKIP(*why);
    REQUIRE_MESSAGE(p.active(), p.message());
    std::string key;
    {
      kjit::Runtime first(kjit::test::quiet_config(dir.path()));
      auto m = first.load(program);                       // compiled
      key = m.compile_result().key;
      CHECK(m.compile_result().outcome == kjit::Outcome::compiled);
      auto again = first.load(program);                   // registry hit
      kjit::Runtime second(kjit::test::quiet_config(dir.path()));
      auto hit = second.load(program);                    // disk hit
      CHECK(hit.compile_result().outcome == kjit::Outcome::hit);
      kjit::DeviceBuffer<float> y(1000);
      y.fill_bytes(0);
      hit.kernel<void(float*, int)>("add_constant").launch({.grid = 4, .block = 256}, y.data(), 1000);
      kjit::Device::current().synchronize();
    }
    p.stop();
    const auto s = p.summary();
    INFO(p.table());
    for (auto [name, count] : std::vector<std::pair<std::string, std::uint64_t>>{
             {"request hash", 3}, {"registry hit", 1}, {"compile", 1}, {"nvrtc", 1}, {"disk hit", 1}, {"load", 2},
             {"launch enqueue", 1}}) {
      const auto* r = phase(s, name);
      REQUIRE_MESSAGE(r != nullptr, name);
      CHECK_MESSAGE(r->count == count, name);
    }
    CHECK(phase(s, "compile")->total_us >= phase(s, "nvrtc")->total_us);
    const auto* k = row(s, "add_constant");
    REQUIRE(k != nullptr);
    CHECK(k->program == "phases.cu");
    // The trace tags each phase with the program and key.
    const auto trace = nlohmann::json::parse(p.chrome_trace());
    int tagged = 0;
    for (const auto& e : trace["traceEvents"]) {
      if (e.value("cat", "") == "kjit" && e["args"].value("key", "") == key) ++tagged;
    }
    CHECK(tagged >= 4);  // compile, nvrtc, disk hit, registry hit, loads
    int kernel_events = 0;
    for (const auto& e : trace["traceEvents"]) {
      if (e.value("cat", "") == "kernel" && e["name"] == "add_constant") {
        ++kernel_events;
        CHECK(e["args"]["program"] == "phases.cu");
        CHECK(e["args"]["cache key"] == key);
        CHECK(e["args"]["cache outcome"] == "hit");  // launched from the disk hit's module
      }
    }
    CHECK(kernel_events == 1);
  }

  TEST_CASE("profile: past max_events the oldest records are dropped and counted") {
    KJIT_REQUIRE_GPU();
    kjit::kernels::Kernels<float> kernels;
    const std::size_t n = 4096;
    auto host = kjit::test::random_floats(n, 8);
    kjit::DeviceBuffer<float> x{std::span<const float>(host)}, y(n);
    kjit::ProfileOptions options;
    options.max_events = 16;
    kjit::Profiler p(options);
    if (auto why = another_tool_holds_cupti(p)) KJIT_SKIP(*why);
    REQUIRE_MESSAGE(p.active(), p.message());
    for (int i = 0; i < 100; ++i) kernels.square(x.data(), y.data(), n);
    kjit::Device::current().synchronize();
    const auto s = p.summary();
    CHECK(s.kernel_count == 16);
    CHECK(s.dropped >= 84 * 2);  // kernels and launch calls
    CHECK(phase(s, "launch enqueue")->count == 16);
    CHECK(p.table().find("records dropped") != std::string::npos);
  }

  TEST_CASE("profile: one Profiler records at a time and a later one records again") {
    KJIT_REQUIRE_GPU();
    std::vector<std::string> said;
    kjit::ProfileOptions options;
    options.log = [&](kjit::LogLevel, std::string_view m) { said.emplace_back(m); };
    {
      kjit::Profiler first(options);
      if (auto why = another_tool_holds_cupti(first)) KJIT_SKIP(*why);
      REQUIRE_MESSAGE(first.active(), first.message());
      kjit::Profiler second(options);
      CHECK_FALSE(second.active());
      CHECK(second.message().find("another kjit::Profiler") != std::string::npos);
    }
    CHECK(said.size() == 1);
    kjit::Profiler third(options);
    CHECK(third.active());
  }

  TEST_CASE("profile: with another CUPTI client attached the profiler says so once and the program runs") {
    KJIT_REQUIRE_GPU();
    std::string why;
    const auto* cupti = kjit::profile::cupti(&why);
    REQUIRE_MESSAGE(cupti != nullptr, why);
    kjit::kernels::Kernels<float> kernels;
    CUpti_SubscriberHandle other = nullptr;
    if (cupti->subscribe(&other, ignore_callback, nullptr) != CUPTI_SUCCESS) {
      KJIT_SKIP("CUPTI is held already (a tool is attached)");
    }
    std::vector<std::string> said;
    kjit::ProfileOptions options;
    options.log = [&](kjit::LogLevel level, std::string_view m) {
      CHECK(level == kjit::LogLevel::warn);
      said.emplace_back(m);
    };
    {
      kjit::Profiler p(options);
      CHECK_FALSE(p.active());
      CHECK(p.message().find("another profiler") != std::string::npos);
      kjit::Profiler q(options);
      CHECK_FALSE(q.active());
      // The program goes on: a launch works and gives the right answer.
      const std::size_t n = 1000;
      auto host = kjit::test::random_floats(n, 23);
      kjit::DeviceBuffer<float> x{std::span<const float>(host)}, y(n);
      y.fill_bytes(0xFF);
      kernels.square(x.data(), y.data(), n);
      auto out = y.to_host();
      for (std::size_t i = 0; i < n; ++i) CHECK(out[i] == host[i] * host[i]);
      CHECK_FALSE(p.summary().recorded);
      CHECK(p.table().find("another profiler") != std::string::npos);
    }
    CHECK(said.size() == 1);
    CHECK(said[0].find("runs unprofiled") != std::string::npos);
    REQUIRE(cupti->unsubscribe(other) == CUPTI_SUCCESS);
    kjit::Profiler after(options);
    CHECK_MESSAGE(after.active(), after.message());
  }

  TEST_CASE("profile: kjit profile runs a program without kjit and writes a table and a trace") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    const std::string program = std::string(KJIT_BINARY_DIR) + "/examples/without_kjit/without_kjit";
    const auto trace = dir.path() / "trace.json";
    auto r = kjit::test::run_command(k_kjit + " profile --trace " + trace.string() + " -- " + program + " 37");
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(r.out.find("without_kjit: 37 launches of raw_saxpy") != std::string::npos);
    CHECK(r.out.find("raw_saxpy") != std::string::npos);
    CHECK(r.out.find("memcpy HtoD") != std::string::npos);
    REQUIRE(std::filesystem::exists(trace));
    const auto t = nlohmann::json::parse(read_file(trace));
    int kernels = 0;
    for (const auto& e : t["traceEvents"]) kernels += e["ph"] == "X" && e.value("cat", "") == "kernel";
    CHECK(kernels == 37);

    auto j = kjit::test::run_command(k_kjit + " profile --json -o " + (dir.path() / "r.json").string() + " -- " +
                                     program + " 5");
    CHECK(j.code == 0);
    const auto doc = nlohmann::json::parse(read_file(dir.path() / "r.json"));
    REQUIRE(doc["processes"].size() == 1);
    const auto& kernels_json = doc["processes"][0]["summary"]["kernels"];
    REQUIRE(kernels_json.size() == 1);
    CHECK(kernels_json[0]["name"] == "raw_saxpy");
    CHECK(kernels_json[0]["calls"] == 5);
  }

  TEST_CASE("profile: kjit profile on a program with kjit shows its phases") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    const std::string program = std::string(KJIT_BINARY_DIR) + "/examples/square/square";
    auto r = kjit::test::run_command("KJIT_CACHE_DIR=" + dir.path().string() + " " + k_kjit + " profile --json -- " +
                                     program + " > " + (dir.path() / "out.txt").string());
    CHECK(r.code == 0);
    const std::string out = read_file(dir.path() / "out.txt");
    const auto brace = out.find("\n{");
    REQUIRE(brace != std::string::npos);
    const auto doc = nlohmann::json::parse(out.substr(brace + 1));
    REQUIRE(doc["processes"].size() == 1);
    std::set<std::string> phases;
    for (const auto& ph : doc["processes"][0]["summary"]["phases"]) phases.insert(ph["phase"].get<std::string>());
    INFO(out);
    CHECK(phases.count("compile") == 1);
    CHECK(phases.count("nvrtc") == 1);
    CHECK(phases.count("load") == 1);
  }
}
