// kjit::Tuner on a real GPU: a deliberately serialized candidate loses to the parallel one;
// outputs after tuning equal a single run's (an accumulator restored, a counter reset); a
// candidate that does not compile and one that cannot launch are skipped with why; a fresh
// Runtime on the same cache uses the decision without timing; KJIT_TUNE off and force; through
// Redis, a second node with an empty local cache reuses the first one's decision.
#include "gpu/gpu_support.hpp"
#include "support/redis_server.hpp"
#include "support/temp_dir.hpp"

#include <kjit/tune.hpp>

#include <doctest/doctest.h>

#include <cmath>

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

TEST_SUITE("gpu") {
  TEST_CASE("tune: the parallel candidate wins over a serialized one and the output is right") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
    const int n = 1 << 20;
    auto host = kjit::test::random_floats(n, 31);
    kjit::DeviceBuffer<float> x{std::span<const float>(host)}, y(n);
    y.fill_bytes(0xFF);
    kjit::Tuner<Scale> tuner(kjit::Program("scale.cu", k_source),
                             {{.kernel = "scale<1>", .block = 256}, {.kernel = "scale<0>", .block = 256}}, quick(), &rt);
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
        {{.kernel = "accumulate", .block = 128}, {.kernel = "accumulate", .block = 512}}, quick(), &rt);
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
                             printing, &rt);
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
                              quick(), &rt);
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
      kjit::Tuner<Scale> t(kjit::Program("scale.cu", k_source), candidates, quick(), &rt);
      chosen = t.launch(key, grid_for(n), nullptr, {}, x.data(), y.data(), 1.0f, n).chosen;
      CHECK(t.stats().timed == 1);
      CHECK(chosen != 0);
    }
    {
      kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
      kjit::Tuner<Scale> t(kjit::Program("scale.cu", k_source), candidates, quick(), &rt);
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
      kjit::Tuner<Scale> t(kjit::Program("scale.cu", k_source), fewer, quick(), &rt);
      t.launch(key, grid_for(n), nullptr, {}, x.data(), y.data(), 2.0f, n);
      CHECK(t.stats().timed == 1);
    }
    {
      kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
      auto o = quick();
      o.mode = kjit::TuneMode::off;
      kjit::Tuner<Scale> t(kjit::Program("scale.cu", k_source), candidates, o, &rt);
      const auto& d = t.launch(key, grid_for(n), nullptr, {}, x.data(), y.data(), 2.0f, n);
      CHECK(d.source == kjit::TuneDecision::Source::off);
      CHECK(d.chosen == 0);
      CHECK(t.stats().timed == 0);
    }
    {
      kjit::Runtime rt(kjit::test::quiet_config(dir.path()));
      auto o = quick();
      o.mode = kjit::TuneMode::force;
      kjit::Tuner<Scale> t(kjit::Program("scale.cu", k_source), candidates, o, &rt);
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
      std::printf("[kjit-skip] no redis-server: %s\n", e.what());
      return;
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
      kjit::Tuner<Scale> t(kjit::Program("scale.cu", k_source), candidates, quick(), &a);
      CHECK(t.launch(kjit::TuneKey().add("n", n), grid_for(n), nullptr, {}, x.data(), y.data(), 1.0f, n).source ==
            kjit::TuneDecision::Source::timed);
    }  // node a's Runtime sends what its queue holds
    kjit::Runtime b(node("b"));
    kjit::Tuner<Scale> t(kjit::Program("scale.cu", k_source), candidates, quick(), &b);
    const auto& d = t.launch(kjit::TuneKey().add("n", n), grid_for(n), nullptr, {}, x.data(), y.data(), 1.0f, n);
    CHECK(d.source == kjit::TuneDecision::Source::cache);
    CHECK(d.chosen == 1);
    CHECK(t.stats().timed == 0);
  }
}
