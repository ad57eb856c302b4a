// kjit::Profiler's hardware counters on a real GPU (label gpu): a device-to-device copy at
// bandwidth reads as DRAM-bound and an FMA loop as SM-bound; each figure agrees with
// `ncu --clock-control none` on the same kernel and launch within 5 points (when ncu is here);
// a kernel that adds 1, measured with multi-pass replay, leaves its input incremented exactly
// once; launches the filter leaves out are neither serialized nor wrong; `kjit profile
// --metrics` on a program without kjit, and on a PyTorch matmul when PyTorch is here.
#include "gpu/gpu_support.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"

#include "core/driver/driver_api.hpp"

#include <kjit/tools/cache.hpp>
#include <kjit/tools/install.hpp>
#include <kjit/tools/profile.hpp>
#include <kjit/tune.hpp>

#include <doctest/doctest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>

namespace {

const char* k_source = R"(
extern "C" __global__ void sol_copy(const float4* __restrict__ a, float4* __restrict__ b, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) b[i] = a[i];
}
extern "C" __global__ void sol_fma(float* out, int iters) {
  float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 0.5f, d = 0.25f, e = 0.125f, f = 2.0f;
  for (int i = 0; i < iters; ++i) { a = fmaf(a, b, c); d = fmaf(d, b, c); e = fmaf(e, b, f); f = fmaf(f, b, a); }
  if (a + d + e + f == 12345.0f) out[threadIdx.x] = a;
}
extern "C" __global__ void sol_add1(int* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1;
}
template <int MODE>
__global__ void sol_scale(const float* x, float* y, float a, int n) {
  int base = blockIdx.x * blockDim.x;
  if (MODE == 0) {
    int i = base + threadIdx.x;
    if (i < n) y[i] = a * x[i];
  } else if (threadIdx.x == 0) {
    for (int j = 0; j < (int)blockDim.x && base + j < n; ++j) y[base + j] = a * x[base + j];
  }
}
extern "C" __global__ void sol_spin(long long cycles, int* done) {
  const long long start = clock64();
  while (clock64() - start < cycles) {}
  if (threadIdx.x == 0 && blockIdx.x == 0) *done = 1;
}
)";

const std::string k_kjit = std::string(KJIT_BINARY_DIR) + "/cli/kjit";
const std::string k_launcher = std::string(KJIT_BINARY_DIR) + "/tests/tools/kjit_raw_launcher";

// The reason to skip (the profiler's message), or nothing.
std::optional<std::string> another_tool_holds_cupti(const kjit::Profiler& p) {
  if (p.active() || p.message().find("another profiler") == std::string::npos) return std::nullopt;
  return p.message();
}

const kjit::ProfileKernelRow* row(const kjit::ProfileSummary& s, const std::string& name) {
  auto it = std::find_if(s.kernels.begin(), s.kernels.end(), [&](const auto& r) { return r.name == name; });
  return it == s.kernels.end() ? nullptr : &*it;
}

double metric(const kjit::ProfileKernelRow& r, const std::string& name) {
  for (const auto& m : r.metrics) {
    if (m.name == name) return m.mean;
  }
  FAIL("no metric " << name << " in row " << r.name);
  return 0;
}

const std::string k_sm = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
const std::string k_memory = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
const std::string k_dram = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
const std::vector<std::string> k_percentages = {k_sm, k_memory, k_dram,
                                                "l1tex__throughput.avg.pct_of_peak_sustained_active",
                                                "lts__throughput.avg.pct_of_peak_sustained_elapsed",
                                                "sm__warps_active.avg.pct_of_peak_sustained_active"};

struct Kernels {
  kjit::Module module;
  kjit::Kernel<void(const float*, float*, std::size_t)> copy;
  kjit::Kernel<void(float*, int)> fma;
  kjit::Kernel<void(int*, int)> add1;
  kjit::Kernel<void(long long, int*)> spin;
  explicit Kernels(kjit::Runtime& rt)
      : module(rt.load(kjit::Program("sol_kernels.cu", k_source))),
        copy(module.kernel<void(const float*, float*, std::size_t)>("sol_copy")),
        fma(module.kernel<void(float*, int)>("sol_fma")),
        add1(module.kernel<void(int*, int)>("sol_add1")),
        spin(module.kernel<void(long long, int*)>("sol_spin")) {}
};

int multiprocessors() { return kjit::Device::current().multiprocessor_count(); }

// "1,234.5" (ncu's CSV) -> 1234.5
double number(std::string text) {
  text.erase(std::remove(text.begin(), text.end(), ','), text.end());
  return std::strtod(text.c_str(), nullptr);
}

// ncu --csv: one row per metric; the fields are quoted.
std::map<std::string, std::map<std::string, double>> read_ncu_csv(const std::string& out) {
  std::map<std::string, std::map<std::string, double>> by_kernel;
  std::istringstream lines(out);
  std::string line;
  std::vector<std::string> header;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] != '"') continue;
    std::vector<std::string> fields;
    for (std::size_t i = 0; i < line.size();) {
      if (line[i] != '"') { ++i; continue; }
      const std::size_t end = line.find('"', i + 1);
      if (end == std::string::npos) break;
      fields.push_back(line.substr(i + 1, end - i - 1));
      i = end + 1;
    }
    if (header.empty()) {
      header = fields;
      continue;
    }
    auto at = [&](const char* name) -> std::string {
      auto it = std::find(header.begin(), header.end(), name);
      const auto i = static_cast<std::size_t>(it - header.begin());
      return it == header.end() || i >= fields.size() ? std::string() : fields[i];
    };
    by_kernel[at("Kernel Name")][at("Metric Name")] = number(at("Metric Value"));
  }
  return by_kernel;
}

bool on_path(const std::string& tool) { return kjit::test::run_command("command -v " + tool + " >/dev/null 2>&1").code == 0; }

}  // namespace

TEST_SUITE("profile metrics") {
  TEST_CASE("profile metrics: a copy at bandwidth is DRAM-bound and an FMA loop SM-bound") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    Kernels k(rt);
    const int sms = multiprocessors();
    const std::size_t n4 = std::size_t{32} << 20;  // float4s: 512 MiB each way
    auto host = kjit::test::random_floats(n4 * 4, 21);
    kjit::DeviceBuffer<float> a{std::span<const float>(host)}, b(n4 * 4), out(4096);
    b.fill_bytes(0xFF);

    kjit::Profiler p({.metrics = {"sol"}});
    if (auto why = another_tool_holds_cupti(p)) KJIT_SKIP(*why);
    REQUIRE_MESSAGE(p.active(), p.message());
    k.copy({.grid = {static_cast<unsigned>(sms) * 8}, .block = {512}}, a.data(), b.data(), n4);
    k.fma({.grid = {static_cast<unsigned>(sms) * 16}, .block = {256}}, out.data(), 20000);
    kjit::Device::current().synchronize();
    p.stop();
    const auto s = p.summary();
    const std::string table = p.table();
    MESSAGE(table);
    REQUIRE_MESSAGE(s.metric_message.empty(), s.metric_message);
    CHECK(s.metric_sol);
    CHECK(s.metric_passes > 1);
    CHECK(s.measured_launches == 2);
    const auto* copy = row(s, "sol_copy");
    const auto* fma = row(s, "sol_fma");
    REQUIRE(copy != nullptr);
    REQUIRE(fma != nullptr);
    CHECK(copy->measured == 1);
    CHECK(metric(*copy, k_dram) >= 70);
    CHECK(metric(*copy, k_memory) >= 70);
    CHECK(metric(*copy, k_sm) < 30);
    CHECK(metric(*fma, k_sm) >= 70);
    CHECK(metric(*fma, k_dram) <= 10);
    CHECK(metric(*copy, "launch__grid_size") == sms * 8);
    CHECK(metric(*copy, "launch__block_size") == 512);
    CHECK(metric(*copy, "launch__registers_per_thread") > 0);
    // The replayed kernel keeps its measured duration in the timing table.
    CHECK(copy->gpu_total_us == doctest::Approx(metric(*copy, "gpu__time_duration.sum") / 1e3));
    CHECK(copy->gpu_total_us > 0);
    CHECK(b.to_host() == host);  // the copy is right after its replays
    CHECK(table.find("Compute Throughput %") != std::string::npos);
  }

  TEST_CASE("profile metrics: an add-1 kernel measured with multi-pass replay adds 1 exactly once") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    Kernels k(rt);
    std::mt19937 gen(5);
    const int n = 3'000'017;
    std::vector<int> x0(static_cast<std::size_t>(n));
    for (auto& v : x0) v = static_cast<int>(gen() % 2'000'000) - 1'000'000;
    kjit::DeviceBuffer<int> x{std::span<const int>(x0)};
    const int launches = 6;
    kjit::Profiler p({.metrics = {"sol"}, .metric_filter = {.kernel = "add1", .launch_count = 3, .launch_skip = 2}});
    if (auto why = another_tool_holds_cupti(p)) KJIT_SKIP(*why);
    REQUIRE_MESSAGE(p.active(), p.message());
    for (int i = 0; i < launches; ++i) k.add1({.grid = {kjit::ceil_div(n, 256)}, .block = {256}}, x.data(), n);
    kjit::Device::current().synchronize();
    p.stop();
    const auto s = p.summary();
    MESSAGE(p.table());
    REQUIRE_MESSAGE(s.metric_message.empty(), s.metric_message);
    CHECK(s.metric_passes > 1);  // every measured launch ran that many times
    const auto* add1 = row(s, "sol_add1");
    REQUIRE(add1 != nullptr);
    CHECK(add1->calls == launches);
    CHECK(add1->measured == 3);
    const auto back = x.to_host();
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < back.size(); ++i) wrong += back[i] != x0[i] + launches;
    CHECK(wrong == 0);
  }

  TEST_CASE("profile metrics: launches the filter leaves out are not serialized and compute right") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    Kernels k(rt);
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    REQUIRE(lib != nullptr);
    auto query = reinterpret_cast<CUresult (*)(CUstream)>(dlsym(lib, "cuStreamQuery"));
    REQUIRE(reinterpret_cast<void*>(query) != nullptr);
    kjit::DeviceBuffer<int> done(1);
    const int n = 1 << 20;
    std::vector<int> x0(n);
    std::mt19937 gen(9);
    for (auto& v : x0) v = static_cast<int>(gen() % 1000) + 1;
    kjit::DeviceBuffer<int> x{std::span<const int>(x0)};
    kjit::Profiler p({.metrics = {"sol"}, .metric_filter = {.kernel = "^sol_add1$"}});
    if (auto why = another_tool_holds_cupti(p)) KJIT_SKIP(*why);
    REQUIRE_MESSAGE(p.active(), p.message());
    // An unmeasured spin of about 0.2 s: its launch returns while it runs (not serialized).
    done.fill_bytes(0);
    k.spin({.grid = {1}, .block = {32}}, 400'000'000LL, done.data());
    CHECK(query(nullptr) == CUDA_ERROR_NOT_READY);
    kjit::Device::current().synchronize();
    CHECK(done.to_host()[0] == 1);
    // A measured launch returns only once its replays are done.
    k.add1({.grid = {kjit::ceil_div(n, 256)}, .block = {256}}, x.data(), n);
    CHECK(query(nullptr) == CUDA_SUCCESS);
    // Unmeasured launches keep going, right, around it.
    for (int i = 0; i < 4; ++i) k.copy({.grid = {64}, .block = {256}}, reinterpret_cast<const float*>(x.data()),
                                       reinterpret_cast<float*>(x.data()), 0);
    kjit::Device::current().synchronize();
    p.stop();
    const auto s = p.summary();
    REQUIRE_MESSAGE(s.metric_message.empty(), s.metric_message);
    CHECK(s.measured_launches == 1);
    REQUIRE(row(s, "sol_spin") != nullptr);
    CHECK(row(s, "sol_spin")->measured == 0);
    CHECK(row(s, "sol_copy")->calls == 4);
    const auto back = x.to_host();
    std::size_t wrong = 0;
    for (int i = 0; i < n; ++i) wrong += back[static_cast<std::size_t>(i)] != x0[static_cast<std::size_t>(i)] + 1;
    CHECK(wrong == 0);
  }

  TEST_CASE("profile metrics: kjit profile --metrics on a program without kjit and its launches stay right") {
    KJIT_REQUIRE_GPU();
    const std::string program = std::string(KJIT_BINARY_DIR) + "/examples/without_kjit/without_kjit";
    // 25 launches of y += a*x, 4 measured past the first 3: the program checks every one applied once.
    auto r = kjit::test::run_command(k_kjit + " profile --json --metrics sol -c 4 -s 3 -- " + program + " 25 2>/dev/null");
    INFO(r.out);
    REQUIRE(r.code == 0);
    const auto doc = nlohmann::json::parse(r.out.substr(r.out.find('{')));
    const auto& s = doc["processes"][0]["summary"];
    CHECK(s["metrics"]["message"] == "");
    CHECK(s["metrics"]["measured_launches"] == 4);
    CHECK(s["metrics"]["passes"].get<int>() > 1);
    const auto& k = s["kernels"][0];
    CHECK(k["name"] == "raw_saxpy");
    CHECK(k["calls"] == 25);
    CHECK(k["measured"] == 4);
    bool dram = false;
    for (const auto& m : k["metrics"]) dram |= m["name"] == k_dram && m["mean"].get<double>() > 0;
    CHECK(dram);
    // An unknown name is refused before the program runs, with the closest valid names.
    auto bad = kjit::test::run_command(k_kjit + " profile --metrics dram__throughput.avg -- " + program + " 1 2>&1");
    CHECK(bad.code == 2);
    CHECK(bad.out.find("dram__throughput.avg.pct_of_peak_sustained_elapsed") != std::string::npos);
    CHECK(bad.out.find("without_kjit: 1 launches") == std::string::npos);
  }

  TEST_CASE("profile metrics: the figures agree with ncu --clock-control none on the same launches") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    const auto compiled = rt.compile(kjit::Program("sol_kernels.cu", k_source), {});
    REQUIRE(compiled.has_cubin());
    const auto cubin = dir.path() / "sol.cubin";
    std::ofstream(cubin, std::ios::binary) << compiled.cubin;
    if (const char* keep = std::getenv("KJIT_TEST_SOL_CUBIN")) {  // for compute-sanitizer, run by hand
      std::ofstream(keep, std::ios::binary) << compiled.cubin;
    }
    const std::string run = k_launcher + " " + cubin.string();
    auto ours = kjit::test::run_command(k_kjit + " profile --json --metrics sol -- " + run + " 2>/dev/null");
    INFO(ours.out);
    REQUIRE(ours.code == 0);
    const auto doc = nlohmann::json::parse(ours.out.substr(ours.out.find('{')));
    std::map<std::string, std::map<std::string, double>> kjit_figures;
    for (const auto& k : doc["processes"][0]["summary"]["kernels"]) {
      for (const auto& m : k["metrics"]) kjit_figures[k["name"]][m["name"]] = m["mean"];
    }
    REQUIRE(kjit_figures.count("sol_copy") == 1);
    REQUIRE(kjit_figures.count("sol_fma") == 1);
    if (!on_path("ncu")) KJIT_SKIP("ncu is not on PATH: the agreement with Nsight Compute is not checked");
    std::string names;
    for (const auto& m : k_percentages) names += (names.empty() ? "" : ",") + m;
    auto theirs = kjit::test::run_command("ncu --clock-control none --csv --metrics " + names + " " + run + " 2>&1");
    INFO(theirs.out);
    REQUIRE(theirs.code == 0);
    const auto ncu = read_ncu_csv(theirs.out);
    for (const char* kernel : {"sol_copy", "sol_fma"}) {
      REQUIRE(ncu.count(kernel) == 1);
      for (const auto& m : k_percentages) {
        INFO(kernel << " " << m << ": kjit " << kjit_figures[kernel][m] << ", ncu " << ncu.at(kernel).at(m));
        CHECK(std::fabs(kjit_figures[kernel][m] - ncu.at(kernel).at(m)) <= 5.0);
      }
      MESSAGE(kernel << ": DRAM kjit " << kjit_figures[kernel][k_dram] << " ncu " << ncu.at(kernel).at(k_dram) << "; SM kjit "
                     << kjit_figures[kernel][k_sm] << " ncu " << ncu.at(kernel).at(k_sm));
    }
  }

  TEST_CASE("profile metrics: kjit profile --metrics sol names a PyTorch matmul's kernels with SM throughput") {
    KJIT_REQUIRE_GPU();
    if (kjit::test::run_command("python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null").code != 0) {
      KJIT_SKIP("no PyTorch with CUDA here");
    }
    auto r = kjit::test::run_command(
        k_kjit + " profile --json --metrics sol -k 'gemm|cutlass|xmma|Kernel' -c 2 -- python3 -c "
                 "'import torch; a = torch.randn(4096, 4096, device=\"cuda\"); b = a @ a; torch.cuda.synchronize()' "
                 "2>/dev/null");
    INFO(r.out);
    REQUIRE(r.code == 0);
    const auto doc = nlohmann::json::parse(r.out.substr(r.out.find('{')));
    bool found = false;
    for (const auto& k : doc["processes"][0]["summary"]["kernels"]) {
      if (k["measured"].get<int>() == 0) continue;
      for (const auto& m : k["metrics"]) {
        if (m["name"] == k_sm && m["mean"].get<double>() > 0) {
          found = true;
          MESSAGE(k["name"].get<std::string>() << ": SM throughput " << m["mean"].get<double>() << "%");
        }
      }
    }
    CHECK(found);
  }

  TEST_CASE("profile metrics: with KJIT_TUNE_METRICS=sol a tuner's decision says why its winner won") {
    KJIT_REQUIRE_GPU();
    kjit::install_tools();  // the tuner's explainer is libkjit_tools' Profiler
    kjit::test::TempDir dir;
    kjit::test::ScopedEnv metrics("KJIT_TUNE_METRICS", "sol");
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    const int n = 1 << 22;
    auto host = kjit::test::random_floats(n, 41);
    kjit::DeviceBuffer<float> x{std::span<const float>(host)}, y(n);
    y.fill_bytes(0xFF);
    kjit::TuneOptions o;
    o.mode = kjit::TuneMode::on;
    o.print = false;
    o.round_ms = 2;
    kjit::Tuner<void(const float*, float*, float, int)> tuner(
        kjit::Program("sol_kernels.cu", k_source),
        {{.kernel = "sol_scale<1>", .block = 256}, {.kernel = "sol_scale<0>", .block = 256}}, o, rt);
    const auto& d = tuner.launch(kjit::TuneKey().add("n", n),
                                 [](const kjit::TuneCandidate& c) { return kjit::Dim3(kjit::ceil_div(n, c.block.x)); },
                                 nullptr, {}, x.data(), y.data(), 1.5f, n);
    CHECK(d.chosen == 1);
    const auto out = y.to_host();
    std::size_t wrong = 0;
    for (int i = 0; i < n; ++i) wrong += out[static_cast<std::size_t>(i)] != 1.5f * host[static_cast<std::size_t>(i)];
    CHECK(wrong == 0);  // the measured launches' outputs were put back, then the winner ran
    const auto decisions = kjit::Cache(dir.path()).tuning_decisions();
    REQUIRE(decisions.size() == 1);
    MESSAGE("why: " << decisions[0].why);
    CHECK(decisions[0].why.find("DRAM") != std::string::npos);
    CHECK(decisions[0].why.find("vs sol_scale<1>") != std::string::npos);
    auto listed = kjit::test::run_command(k_kjit + " --cache-dir " + dir.path().string() + " cache ls --tuning");
    CHECK(listed.out.find("why: DRAM") != std::string::npos);
  }
}
