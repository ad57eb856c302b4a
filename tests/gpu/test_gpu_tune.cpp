// kjit::Tuner on a real GPU: a deliberately serialized candidate loses to the parallel one;
// outputs after tuning equal a single run's (an accumulator restored, a counter reset); a
// candidate that does not compile and one that cannot launch are skipped with why; a fresh
// Runtime on the same cache uses the decision without timing; KJIT_TUNE off and force; through
// Redis, a second node with an empty local cache reuses the first one's decision. From a
// manifest's "tuning" entry: `kjit tune` decides its shapes and a program's loader tuner uses
// them without timing (also on another node, through Redis); the outputs it names are reset and
// restored; a shape it cannot make and a spec the kernel does not match fail in their items. Inside a CUDA graph capture, a first call takes the
// first candidate and the first call outside decides; the shipped softmax captures.
#include "gpu/gpu_support.hpp"
#include "support/redis_server.hpp"
#include "core/driver/driver_api.hpp"
#include "support/temp_dir.hpp"

#include <kjit/kernels.hpp>
#include <kjit/tune.hpp>
#include <kjit/loader.hpp>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>

namespace {

// MODE 0: one element per thread. MODE 1: each block's first thread does the block's elements
// one after another (the same result, much slower).
const char* k_source = R"(
#ifdef BROKEN
#error this candidate does not compile
#endif
template <int MODE>
__global__ void scale(const float* x, float* y, float a, int n) {
  int base = blockIdx.x * blockDim.x;
  if (MODE == 0) {
    int i = base + threadIdx.x;
    if (i < n) y[i] = a * x[i];
  } else if (threadIdx.x == 0) {
    for (int j = 0; j < (int)blockDim.x && base + j < n; ++j) y[base + j] = a * x[base + j];
  }
}
__global__ void accumulate(const float* x, float* y, unsigned* counter, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] += x[i];
    atomicAdd(counter, 1u);
  }
}
)";

using Scale = void(const float*, float*, float, int);

kjit::TuneOptions quick() {
  kjit::TuneOptions o;
  o.mode = kjit::TuneMode::on;
  o.print = false;
  o.round_ms = 2;
  return o;
}

auto grid_for(int n) {
  return [n](const kjit::TuneCandidate& c) { return kjit::Dim3(kjit::ceil_div(n, c.block.x)); };
}

}  // namespace

TEST_SUITE("tune") {
  TEST_CASE("tune: the parallel candidate wins over a serialized one and the output is right") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    const int n = 1 << 20;
    auto host = kjit::test::random_floats(n, 31);
    kjit::DeviceBuffer<float> x{std::span<const float>(host)}, y(n);
    y.fill_bytes(0xFF);
    kjit::Tuner<Scale> tuner(kjit::Program("scale.cu", k_source),
                             {{.kernel = "scale<1>", .block = 256}, {.kernel = "scale<0>", .block = 256}}, quick(), rt);
    const auto& d = tuner.launch(kjit::TuneKey().add_bucketed("n", n), grid_for(n), nullptr, {}, x.data(), y.data(),
                                 1.5f, n);
    CHECK(d.source == kjit::TuneDecision::Source::timed);
    CHECK(d.chosen == 1);
    REQUIRE(d.median_us.size() == 2);
    CHECK(d.median_us[1] > 0);
    INFO("serialized " << d.median_us[0] << " us, parallel " << d.median_us[1] << " us");
    auto out = y.to_host();
    for (int i = 0; i < n; ++i) REQUIRE(out[i] == 1.5f * host[i]);
    CHECK(tuner.stats().timed == 1);
    // The same key again: the held decision, no timing.
    y.fill_bytes(0xFF);
    const auto& again = tuner.launch(kjit::TuneKey().add_bucketed("n", n - 5), grid_for(n), nullptr, {}, x.data(),
                                     y.data(), 2.0f, n);
    CHECK(&again == &d);
    CHECK(tuner.stats().timed == 1);
    CHECK(tuner.stats().in_memory >= 1);
    out = y.to_host();
    for (int i = 0; i < n; i += 997) CHECK(out[i] == 2.0f * host[i]);
  }

  TEST_CASE("tune: outputs after tuning equal one run's with restore and reset") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    const int n = 300001;
    auto hx = kjit::test::random_floats(n, 3), hy = kjit::test::random_floats(n, 4);
    kjit::DeviceBuffer<float> x{std::span<const float>(hx)}, y{std::span<const float>(hy)};
    kjit::DeviceBuffer<unsigned> counter(1);
    counter.fill_bytes(0x7F);  // garbage: the reset zeroes it before each run
    kjit::Tuner<void(const float*, float*, unsigned*, int)> tuner(
        kjit::Program("accumulate.cu", k_source),
        {{.kernel = "accumulate", .block = 128}, {.kernel = "accumulate", .block = 512}}, quick(), rt);
    kjit::TuneBuffers buffers;
    buffers.restore.push_back({y.data(), n * sizeof(float)});
    buffers.reset_to_zero.push_back({counter.data(), sizeof(unsigned)});
    const auto& d = tuner.launch(kjit::TuneKey().add("n", n), grid_for(n), nullptr, buffers, x.data(), y.data(),
                                 counter.data(), n);
    CHECK(d.source == kjit::TuneDecision::Source::timed);
    auto out = y.to_host();
    for (int i = 0; i < n; ++i) REQUIRE(out[i] == hy[i] + hx[i]);  // added once, not once per timing run
    CHECK(counter.to_host()[0] == static_cast<unsigned>(n));
  }

  TEST_CASE("tune: candidates that do not compile or cannot launch are skipped with why") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    std::vector<std::string> logged;
    auto config = kjit::test::quiet_config(dir.path());
    config.log = [&](kjit::LogLevel, std::string_view m) { logged.emplace_back(m); };
    kjit::Runtime rt(config);
    auto printing = quick();
    printing.print = true;  // KJIT_PRINT_TUNING: the decision and its timings through the log
    const int n = 4096;
    auto host = kjit::test::random_floats(n, 8);
    kjit::DeviceBuffer<float> x{std::span<const float>(host)}, y(n);
    y.fill_bytes(0xFF);
    kjit::Tuner<Scale> tuner(kjit::Program("scale.cu", k_source),
                             {{.kernel = "scale<0>", .defines = {"BROKEN"}, .block = 256},
                              {.kernel = "scale<0>", .block = 2048},  // over every GPU's 1024 threads
                              {.kernel = "scale<0>", .block = 128}},
                             printing, rt);
    const auto& d = tuner.launch(kjit::TuneKey().add("n", n), grid_for(n), nullptr, {}, x.data(), y.data(), 3.0f, n);
    CHECK(d.chosen == 2);
    REQUIRE(logged.size() == 1);
    CHECK(logged[0].find("tuning scale.cu for n=4096") != std::string::npos);
    CHECK(logged[0].find("* scale<0> block (128,1,1)") != std::string::npos);
    CHECK(logged[0].find(" us") != std::string::npos);
    CHECK(logged[0].find("does not launch") != std::string::npos);
    CHECK(d.why_not[0].find("does not compile") != std::string::npos);
    CHECK(d.why_not[0].find("scale.cu") != std::string::npos);
    CHECK(d.why_not[1].find("does not launch") != std::string::npos);
    CHECK(d.median_us[0] < 0);
    CHECK(d.median_us[1] < 0);
    auto out = y.to_host();
    for (int i = 0; i < n; ++i) REQUIRE(out[i] == 3.0f * host[i]);
    // All failing: one error naming each.
    kjit::Tuner<Scale> broken(kjit::Program("scale.cu", k_source),
                              {{.kernel = "scale<0>", .defines = {"BROKEN"}, .block = 256},
                               {.kernel = "scale<0>", .block = 4096}},
                              quick(), rt);
    try {
      broken.launch(kjit::TuneKey().add("n", n), grid_for(n), nullptr, {}, x.data(), y.data(), 3.0f, n);
      FAIL("expected an error");
    } catch (const kjit::Error& e) {
      CHECK(std::string(e.what()).find("every candidate failed") != std::string::npos);
      CHECK(std::string(e.what()).find("does not compile") != std::string::npos);
      CHECK(std::string(e.what()).find("does not launch") != std::string::npos);
    }
  }

  TEST_CASE("tune: a fresh Runtime on the same cache uses the decision without timing and off and force obey") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    const int n = 1 << 18;
    auto host = kjit::test::random_floats(n, 12);
    kjit::DeviceBuffer<float> x{std::span<const float>(host)}, y(n);
    const std::vector<kjit::TuneCandidate> candidates{{.kernel = "scale<1>", .block = 512},
                                                      {.kernel = "scale<0>", .block = 128},
                                                      {.kernel = "scale<0>", .block = 256}};
    const auto key = kjit::TuneKey().add_bucketed("n", n);
    std::size_t chosen = 0;
    {
      kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
      kjit::Tuner<Scale> t(kjit::Program("scale.cu", k_source), candidates, quick(), rt);
      chosen = t.launch(key, grid_for(n), nullptr, {}, x.data(), y.data(), 1.0f, n).chosen;
      CHECK(t.stats().timed == 1);
      CHECK(chosen != 0);
    }
    {
      kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
      kjit::Tuner<Scale> t(kjit::Program("scale.cu", k_source), candidates, quick(), rt);
      y.fill_bytes(0xFF);
      const auto& d = t.launch(key, grid_for(n), nullptr, {}, x.data(), y.data(), 2.0f, n);
      CHECK(d.source == kjit::TuneDecision::Source::cache);
      CHECK(d.chosen == chosen);
      CHECK(t.stats().timed == 0);
      CHECK(t.stats().from_cache == 1);
      auto out = y.to_host();
      for (int i = 0; i < n; i += 101) CHECK(out[i] == 2.0f * host[i]);
    }
    {
      // Another candidate list is another decision.
      kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
      auto fewer = candidates;
      fewer.pop_back();
      kjit::Tuner<Scale> t(kjit::Program("scale.cu", k_source), fewer, quick(), rt);
      t.launch(key, grid_for(n), nullptr, {}, x.data(), y.data(), 2.0f, n);
      CHECK(t.stats().timed == 1);
    }
    {
      kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
      auto o = quick();
      o.mode = kjit::TuneMode::off;
      kjit::Tuner<Scale> t(kjit::Program("scale.cu", k_source), candidates, o, rt);
      const auto& d = t.launch(key, grid_for(n), nullptr, {}, x.data(), y.data(), 2.0f, n);
      CHECK(d.source == kjit::TuneDecision::Source::off);
      CHECK(d.chosen == 0);
      CHECK(t.stats().timed == 0);
    }
    {
      kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
      auto o = quick();
      o.mode = kjit::TuneMode::force;
      kjit::Tuner<Scale> t(kjit::Program("scale.cu", k_source), candidates, o, rt);
      const auto& d = t.launch(key, grid_for(n), nullptr, {}, x.data(), y.data(), 2.0f, n);
      CHECK(d.source == kjit::TuneDecision::Source::timed);
      CHECK(t.stats().timed == 1);
    }
  }

  TEST_CASE("tune: a second node with an empty local cache uses the first node's decision through Redis") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    std::optional<kjit::test::RedisServer> redis;
    try {
      redis.emplace(dir.path() / "redis");
    } catch (const std::exception& e) {
      KJIT_SKIP("no redis-server: " << e.what());
    }
    const int n = 1 << 16;
    auto host = kjit::test::random_floats(n, 77);
    kjit::DeviceBuffer<float> x{std::span<const float>(host)}, y(n);
    const std::vector<kjit::TuneCandidate> candidates{{.kernel = "scale<1>", .block = 256},
                                                      {.kernel = "scale<0>", .block = 256}};
    auto node = [&](const char* name) {
      auto c = kjit::test::quiet_config(dir.path() / name);
      c.remote_cache = redis->url();
      return c;
    };
    {
      kjit::Runtime a(node("a"));
      kjit::Tuner<Scale> t(kjit::Program("scale.cu", k_source), candidates, quick(), a);
      CHECK(t.launch(kjit::TuneKey().add("n", n), grid_for(n), nullptr, {}, x.data(), y.data(), 1.0f, n).source ==
            kjit::TuneDecision::Source::timed);
    }  // node a's Runtime sends what its queue holds
    kjit::Runtime b(node("b"));
    kjit::Tuner<Scale> t(kjit::Program("scale.cu", k_source), candidates, quick(), b);
    const auto& d = t.launch(kjit::TuneKey().add("n", n), grid_for(n), nullptr, {}, x.data(), y.data(), 1.0f, n);
    CHECK(d.source == kjit::TuneDecision::Source::cache);
    CHECK(d.chosen == 1);
    CHECK(t.stats().timed == 0);
  }
}

// A manifest's "tuning" entry: `kjit tune` (the built CLI, a real process) decides its shapes,
// and a program's KernelLoader::tuner finds the decisions without timing.
namespace {

const std::string k_kjit = std::string(KJIT_BINARY_DIR) + "/cli/kjit";

const char* k_tuning_manifest = R"J({
  "kjit_manifest": 1,
  "kernels": [{
    "file": "scale.cu",
    "tuning": [{
      "name": "scale",
      "candidates": [{"kernel": "scale<1>", "block": 256},
                     {"kernel": "scale<0>", "block": 256, "defines": ["BROKEN"], "label": "broken"},
                     {"kernel": "scale<0>", "block": 256}],
      "key": ["pow2(n)"],
      "grid": "ceil_div(n, block)",
      "arguments": [{"name": "x", "type": "const float*", "count": "n"},
                    {"name": "y", "type": "float*", "count": "n", "output": "restore"},
                    {"name": "a", "type": "float", "value": 1.5},
                    {"name": "n", "type": "int", "value": "n"}],
      "shapes": [{"n": 1048576}, {"n": 65536}]
    }, {
      "name": "accumulate",
      "candidates": [{"kernel": "accumulate", "block": 128}, {"kernel": "accumulate", "block": 512}],
      "key": ["n"],
      "grid": "ceil_div(n, block)",
      "arguments": [{"name": "x", "type": "const float*", "count": "n"},
                    {"name": "y", "type": "float*", "count": "n", "output": "restore"},
                    {"name": "counter", "type": "unsigned*", "count": 1, "output": "reset"},
                    {"name": "n", "type": "int", "value": "n"}]
    }]
  }]
})J";

struct TuningFolder {
  kjit::test::TempDir dir;
  std::filesystem::path kernels = dir.path() / "kernels", cache = dir.path() / "cache";
  TuningFolder() {
    std::filesystem::create_directories(kernels);
    std::ofstream(kernels / "scale.cu") << k_source;
    std::ofstream(kernels / "kjit.json") << k_tuning_manifest;
  }
  kjit::test::CommandResult tune(const std::string& flags = "") const {
    return kjit::test::run_command(k_kjit + " --json --cache-dir " + cache.string() + " tune " + flags + " " +
                                   kernels.string() + " 2>/dev/null");
  }
  kjit::LoaderOptions loader_options() const {
    return {.folders = {kernels}, .use_environment = false, .use_installed = false};
  }
};

}  // namespace

TEST_SUITE("tune ahead") {
  TEST_CASE("tune ahead: kjit tune decides a manifest's shapes and a program's tuner uses them without timing") {
    KJIT_REQUIRE_GPU();
    TuningFolder f;
    auto first = f.tune();
    REQUIRE(first.code == 0);
    const auto j = nlohmann::json::parse(first.out);
    REQUIRE(j["items"].size() == 2);
    CHECK(j["timed"] == 2);
    CHECK(j["failed"] == 0);
    for (const auto& item : j["items"]) {
      CHECK(item["status"] == "timed");
      CHECK(item["name"] == "scale");
      CHECK(item["chosen"] == 2);  // the parallel candidate; the serialized one loses, the broken one is out
      CHECK(item["candidates"][1]["why_not"].get<std::string>().find("does not compile") != std::string::npos);
      CHECK(item["candidates"][0]["median_us"].get<double>() > item["candidates"][2]["median_us"].get<double>());
    }
    CHECK(j["items"][0]["tuning_key"] == "n<=1048576");

    // A program: a fresh Runtime on that cache, its loader's tuner over the same entry.
    const int n = 1000000;  // bucket 1048576: decided by kjit tune
    auto hx = kjit::test::random_floats(n, 41);
    kjit::DeviceBuffer<float> x{std::span<const float>(hx)}, y(n);
    y.fill_bytes(0xFF);
    {
      kjit::Runtime rt(kjit::test::quiet_config(f.cache));
      kjit::KernelLoader loader(f.loader_options(), rt);
      auto t = loader.tuner<Scale>("scale.cu", "scale", {}, quick());
      const auto& d = t.launch({{"n", n}}, nullptr, x.data(), y.data(), 1.5f, n);
      CHECK(d.source == kjit::TuneDecision::Source::cache);
      CHECK(d.chosen == 2);
      CHECK(t.stats().timed == 0);
      CHECK(t.stats().from_cache == 1);
      auto out = y.to_host();
      for (int i = 0; i < n; ++i) REQUIRE(out[i] == 1.5f * hx[i]);
      // A shape kjit tune did not list is timed here, and its outputs are one run's.
      y.fill_bytes(0xFF);
      const auto& other = t.launch({{"n", 5000}}, nullptr, x.data(), y.data(), -2.0f, 5000);
      CHECK(other.source == kjit::TuneDecision::Source::timed);
      CHECK(t.stats().timed == 1);
      out = y.to_host();
      for (int i = 0; i < 5000; ++i) REQUIRE(out[i] == -2.0f * hx[i]);
      CHECK(std::isnan(out[5000]));  // past n: untouched
      // Back and forth between the two shapes: each call launches its own shape's winner and grid.
      for (int round = 0; round < 3; ++round) {
        const int m = round % 2 == 0 ? n : 5000;
        const float a = 0.25f + static_cast<float>(round);
        y.fill_bytes(0xFF);
        const auto& again = t.launch({{"n", m}}, nullptr, x.data(), y.data(), a, m);
        CHECK(&again == (m == n ? &d : &other));
        t.launch({{"n", m}}, nullptr, x.data(), y.data(), a, m);  // the same shape again
        out = y.to_host();
        for (int i = 0; i < m; ++i) REQUIRE(out[i] == a * hx[i]);
        if (m < n) CHECK(std::isnan(out[m]));
      }
      CHECK(t.stats().timed == 1);
    }

    // Again: decided already; --force times again.
    auto again = nlohmann::json::parse(f.tune().out);
    CHECK(again["cached"] == 2);
    CHECK(again["timed"] == 0);
    CHECK(again["items"][0]["status"] == "cached");
    auto forced = nlohmann::json::parse(f.tune("--force").out);
    CHECK(forced["timed"] == 2);
    // kjit cache ls --tuning names the tuner.
    const auto ls = kjit::test::run_command(k_kjit + " --cache-dir " + f.cache.string() + " cache ls --tuning");
    CHECK(ls.out.find("scale.cu: scale") != std::string::npos);
    CHECK(ls.out.find("n<=1048576") != std::string::npos);
    // The text table: each shape with its candidates and the chosen one starred.
    const auto text = kjit::test::run_command(k_kjit + " --cache-dir " + f.cache.string() + " tune " +
                                              f.kernels.string());
    CHECK(text.code == 0);
    CHECK(text.out.find("tuning scale.cu: scale for n=1048576 (key n<=1048576)") != std::string::npos);
    CHECK(text.out.find("* scale<0> block (256,1,1)") != std::string::npos);
    CHECK(text.out.find("total: 2 shapes: 0 timed, 2 already decided, 0 failed") != std::string::npos);
  }

  TEST_CASE("tune ahead: kjit tune --remote on one node and a program on another with an empty disk") {
    KJIT_REQUIRE_GPU();
    TuningFolder f;
    std::optional<kjit::test::RedisServer> redis;
    try {
      redis.emplace(f.dir.path() / "redis");
    } catch (const std::exception& e) {
      KJIT_SKIP("no redis-server: " << e.what());
    }
    const auto r = f.tune("--remote " + redis->url());
    REQUIRE(r.code == 0);
    CHECK(nlohmann::json::parse(r.out)["timed"] == 2);
    auto config = kjit::test::quiet_config(f.dir.path() / "other-node");
    config.remote_cache = redis->url();
    kjit::Runtime rt(config);
    kjit::KernelLoader loader(f.loader_options(), rt);
    auto t = loader.tuner<Scale>("scale.cu", "scale", {}, quick());
    const int n = 65536;
    auto hx = kjit::test::random_floats(n, 23);
    kjit::DeviceBuffer<float> x{std::span<const float>(hx)}, y(n);
    y.fill_bytes(0xFF);
    const auto& d = t.launch({{"n", n}}, nullptr, x.data(), y.data(), 3.0f, n);
    CHECK(d.source == kjit::TuneDecision::Source::cache);
    CHECK(d.chosen == 2);
    CHECK(t.stats().timed == 0);
    const auto out = y.to_host();
    for (int i = 0; i < n; ++i) REQUIRE(out[i] == 3.0f * hx[i]);
  }

  TEST_CASE("tune ahead: a manifest tuner resets and restores the outputs it names") {
    KJIT_REQUIRE_GPU();
    TuningFolder f;
    kjit::Runtime rt(kjit::test::quiet_config(f.cache));
    kjit::KernelLoader loader(f.loader_options(), rt);
    auto t = loader.tuner<void(const float*, float*, unsigned*, int)>("scale.cu", "accumulate", {}, quick());
    const int n = 200003;
    auto hx = kjit::test::random_floats(n, 5), hy = kjit::test::random_floats(n, 6);
    kjit::DeviceBuffer<float> x{std::span<const float>(hx)}, y{std::span<const float>(hy)};
    kjit::DeviceBuffer<unsigned> counter(1);
    counter.fill_bytes(0x3C);
    const auto& d = t.launch({{"n", n}}, nullptr, x.data(), y.data(), counter.data(), n);
    CHECK(d.source == kjit::TuneDecision::Source::timed);
    auto out = y.to_host();
    for (int i = 0; i < n; ++i) REQUIRE(out[i] == hy[i] + hx[i]);
    CHECK(counter.to_host()[0] == static_cast<unsigned>(n));
  }

  TEST_CASE("tune ahead: a shape that cannot be made and a spec the kernel does not match fail in their items") {
    KJIT_REQUIRE_GPU();
    TuningFolder f;
    std::string text = k_tuning_manifest;
    text.replace(text.find(R"J({"n": 65536})J"), 12, R"J({"n": 0})J");  // a buffer of 0 elements
    std::ofstream(f.kernels / "kjit.json") << text;
    auto r = f.tune();
    CHECK(r.code == 1);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["timed"] == 1);
    CHECK(j["failed"] == 1);
    CHECK(j["items"][1]["status"] == "failed");
    CHECK(j["items"][1]["error"].get<std::string>().find("count \"n\" is 0") != std::string::npos);
    // The spec says a is a double: every candidate's parameters differ, so every one is skipped.
    text = k_tuning_manifest;
    const std::string as_float = R"J("type": "float", "value": 1.5)J";
    text.replace(text.find(as_float), as_float.size(), R"J("type": "double", "value": 1.5)J");
    std::ofstream(f.kernels / "kjit.json") << text;
    r = f.tune();
    CHECK(r.code == 1);
    j = nlohmann::json::parse(r.out);
    CHECK(j["failed"] == 2);
    const std::string why = j["items"][0]["error"];
    CHECK(why.find("every candidate failed") != std::string::npos);
    CHECK(why.find("double [8 B]") != std::string::npos);
  }
}

// Inside a CUDA graph capture nothing can be timed: a tuner's first call for a key takes the
// first candidate (held only while capturing), and the first call outside a capture decides.
namespace {

struct Captured {
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  ~Captured() {
    const auto& api = kjit::driver::get();
    if (exec) api.cuGraphExecDestroy(exec);
    if (graph) api.cuGraphDestroy(graph);
  }
};

// Captures `work` on `stream` in global mode (the strictest: no allocation, no sync anywhere).
template <class Work>
void capture(Captured& c, CUstream_st* stream, Work work) {
  const auto& api = kjit::driver::get();
  REQUIRE(api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
  work();
  REQUIRE(api.cuStreamEndCapture(stream, &c.graph) == CUDA_SUCCESS);
  REQUIRE(api.cuGraphInstantiateWithFlags(&c.exec, c.graph, 0) == CUDA_SUCCESS);
}

}  // namespace

TEST_SUITE("tune graphs and shipped kernels") {
  TEST_CASE("tune: a first call while capturing a CUDA graph takes the first candidate and a later one decides") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    const int n = 1 << 20;
    auto host = kjit::test::random_floats(n, 91);
    kjit::DeviceBuffer<float> x{std::span<const float>(host)}, y(n);
    kjit::Stream stream;
    kjit::Tuner<Scale> tuner(kjit::Program("scale.cu", k_source),
                             {{.kernel = "scale<1>", .block = 256}, {.kernel = "scale<0>", .block = 256}}, quick(), rt);
    tuner.engine().kernel(0);  // loading is not capturable: load both candidates first
    tuner.engine().kernel(1);
    const auto key = kjit::TuneKey().add("n", n);
    Captured g;
    const kjit::TuneDecision* in_capture = nullptr;
    capture(g, stream.handle(), [&] {
      in_capture = &tuner.launch(key, grid_for(n), stream.handle(), {}, x.data(), y.data(), 2.5f, n);
      tuner.launch(key, grid_for(n), stream.handle(), {}, x.data(), y.data(), 2.5f, n);  // held while capturing
    });
    REQUIRE(in_capture != nullptr);
    CHECK(in_capture->source == kjit::TuneDecision::Source::capture);
    CHECK(in_capture->chosen == 0);
    CHECK(in_capture->why_not[1].find("capturing a CUDA graph") != std::string::npos);
    CHECK(tuner.stats().timed == 0);
    y.fill_bytes(0xFF);
    REQUIRE(kjit::driver::get().cuGraphLaunch(g.exec, stream.handle()) == CUDA_SUCCESS);
    stream.synchronize();
    auto out = y.to_host();
    for (int i = 0; i < n; ++i) REQUIRE(out[i] == 2.5f * host[i]);
    // Outside the capture the key is timed, and the parallel candidate wins.
    y.fill_bytes(0xFF);
    const auto& d = tuner.launch(key, grid_for(n), stream.handle(), {}, x.data(), y.data(), -1.0f, n);
    CHECK(d.source == kjit::TuneDecision::Source::timed);
    CHECK(d.chosen == 1);
    CHECK(tuner.stats().timed == 1);
    out = y.to_host();
    for (int i = 0; i < n; ++i) REQUIRE(out[i] == -1.0f * host[i]);
  }

  TEST_CASE("tune: the shipped softmax's first call inside a graph capture works and is right") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    kjit::kernels::Kernels<float> k(kjit::Device::current(), rt);
    const int rows = 64, cols = 3000;
    auto host = kjit::test::random_floats(static_cast<std::size_t>(rows) * cols, 17);
    kjit::DeviceBuffer<float> x{std::span<const float>(host)}, y(host.size());
    kjit::Stream stream;
    Captured g;
    capture(g, stream.handle(), [&] { k.softmax(x.data(), y.data(), rows, cols, stream.handle()); });
    y.fill_bytes(0xFF);
    REQUIRE(kjit::driver::get().cuGraphLaunch(g.exec, stream.handle()) == CUDA_SUCCESS);
    stream.synchronize();
    const auto out = y.to_host();
    for (int r = 0; r < rows; ++r) {
      double max = -1e300, sum = 0;
      for (int c = 0; c < cols; ++c) max = std::max(max, static_cast<double>(host[r * cols + c]));
      for (int c = 0; c < cols; ++c) sum += std::exp(static_cast<double>(host[r * cols + c]) - max);
      for (int c = 0; c < cols; ++c) {
        const double want = std::exp(static_cast<double>(host[r * cols + c]) - max) / sum;
        REQUIRE(std::abs(out[r * cols + c] - want) <= 2e-5 * want + 1e-7);
      }
    }
    // And outside the capture the same call decides by timing, still right.
    y.fill_bytes(0xFF);
    k.softmax(x.data(), y.data(), rows, cols, stream.handle());
    stream.synchronize();
    CHECK(std::abs(y.to_host()[5] - out[5]) <= 1e-6f);
  }

  TEST_CASE("tune ahead: kjit tune with no arguments decides the shipped square and gelu out of the box") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    const auto r = kjit::test::run_command(k_kjit + " --json --cache-dir " + (dir.path() / "cache").string() +
                                           " tune " + std::string(KJIT_SOURCE_DIR) + "/kernels_src");
    INFO(r.out);
    CHECK(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["timed"] == 4);  // square and gelu, two shapes each
    CHECK(j["failed"] == 0);
  }

  TEST_CASE("tune ahead: kjit tune --shard splits the shipped decisions between shards each decided once") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    const std::string kernels = std::string(KJIT_SOURCE_DIR) + "/kernels_src";
    std::set<std::string> keys;
    std::size_t timed = 0;
    for (int i = 0; i < 3; ++i) {
      // Caches of their own, as three machines of one GPU model.
      const auto r = kjit::test::run_command(k_kjit + " --json --cache-dir " +
                                             (dir.path() / ("cache" + std::to_string(i))).string() + " tune " + kernels +
                                             " --shard " + std::to_string(i) + "/3");
      INFO(r.out);
      REQUIRE(r.code == 0);
      const auto j = nlohmann::json::parse(r.out);
      CHECK(j["shard"]["index"] == i);
      CHECK(j["failed"] == 0);
      CHECK(j["shard"]["elsewhere"] == 4 - j["items"].size());
      timed += j["timed"].get<std::size_t>();
      for (const auto& item : j["items"]) CHECK(keys.insert(item["key"].get<std::string>()).second);
    }
    CHECK(keys.size() == 4);  // square and gelu, two shapes each: every decision in one shard
    CHECK(timed == 4);
  }
}
