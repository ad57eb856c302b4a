// kjit::warm: the bound on compiles at once, the report, and NVRTC precompiled headers
// (created once, then used; never in the key or the stored log).
#include <kjit/tools.hpp>
#include <kjit/loader.hpp>

#include "support/helpers.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <mutex>

namespace {


// A manifest of `n` small kernels with two variants each.
std::filesystem::path small_manifest(const kjit::test::TempDir& dir, int n) {
  std::string entries;
  for (int i = 0; i < n; ++i) {
    auto name = fmt::format("k{}.cu", i);
    kjit::test::write_file(dir / ("k/" + name), "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] *= " +
                                                    std::to_string(i + 2) + ".0f * V; }\n");
    entries += std::string(i ? "," : "") + R"({"file": ")" + name +
               R"(", "variants": [{"name": "one", "defines": ["V=1"]}, {"name": "two", "defines": ["V=2"]}]})";
  }
  kjit::test::write_file(dir / "k/kjit.json", R"({"kjit_manifest": 1, "kernels": [)" + entries + "]}");
  return dir / "k";
}

}  // namespace

TEST_SUITE("warm") {
  TEST_CASE("warm: never more than jobs compiles at once and every kernel x variant x arch is reported") {
    kjit::test::TempDir dir;
    auto kernels = small_manifest(dir, 4);
    for (unsigned jobs : {1u, 2u}) {
      std::mutex mutex;
      std::size_t max_running = 0, started = 0, finished = 0;
      kjit::WarmOptions o{.sources = {kernels}, .archs = {kjit::Arch::sm(80), kjit::Arch::sm(90)}, .jobs = jobs,
                          .precompiled_headers = false, .runtime = kjit::test::quiet_config(dir / ("cache" + std::to_string(jobs)))};
      auto report = kjit::warm(o, [&](const kjit::WarmEvent& e) {
        std::lock_guard lock(mutex);
        max_running = std::max(max_running, e.running);
        (e.kind == kjit::WarmEvent::Kind::started ? started : finished)++;
        CHECK(e.total == 16);
      });
      CHECK(max_running <= jobs);
      CHECK(max_running >= 1);
      CHECK(started == 16);
      CHECK(finished == 16);
      CHECK(report.jobs == jobs);
      CHECK(report.ok());
      REQUIRE(report.items.size() == 16);
      CHECK(report.compiled == 16);
      CHECK(report.items[0].file == "k0.cu");
      CHECK(report.items[0].variant == "one");
      CHECK(report.items[0].arch == kjit::Arch::sm(80));
      CHECK(report.items[1].arch == kjit::Arch::sm(90));
      CHECK(report.items[2].variant == "two");
    }
  }

  TEST_CASE("warm: precompiled headers are created then used and change neither keys nor logs") {
    kjit::test::TempDir dir;
    // Header-heavy kernels with the same options (NVRTC uses a PCH only for the same command
    // line, and the including file's folder is on it); the third in a subfolder creates its own
    // (named after "nn/heavy2.cu").
    std::string entries;
    for (int i = 0; i < 3; ++i) {
      std::string file = (i == 2 ? "nn/heavy" : "heavy") + std::to_string(i) + ".cu";
      kjit::test::write_file(dir / ("k/" + file), R"(#include <cub/block/block_reduce.cuh>
#include <cuda/std/type_traits>
extern "C" __global__ void heavy(const float* x, float* y) {
  using R = cub::BlockReduce<float, 128>;
  __shared__ typename R::TempStorage t;
  float v = R(t).Sum(x[threadIdx.x] * )" + std::to_string(i + 1) + R"(.0f);
  if (threadIdx.x == 0) y[blockIdx.x] = v;
}
)");
      entries += std::string(i ? "," : "") + R"({"file": ")" + file + R"(", "options": {"defines": ["BLOCK=128"]}})";
    }
    kjit::test::write_file(dir / "k/kjit.json", R"({"kjit_manifest": 1, "kernels": [)" + entries + "]}");
    kjit::WarmOptions with{.sources = {dir / "k"}, .archs = {kjit::Arch::sm(90)}, .jobs = 1,
                           .precompiled_headers = true, .runtime = kjit::test::quiet_config(dir / "pch")};
    auto a = kjit::warm(with);
    REQUIRE(a.ok());
    REQUIRE(a.items.size() == 3);
    CHECK(a.items[0].pch == kjit::PchUse::created);
    CHECK(a.items[1].pch == kjit::PchUse::used);
    CHECK(a.items[2].pch == kjit::PchUse::created);

    kjit::WarmOptions without = with;
    without.precompiled_headers = false;
    without.runtime = kjit::test::quiet_config(dir / "plain");
    auto b = kjit::warm(without);
    REQUIRE(b.ok());
    for (std::size_t i = 0; i < 3; ++i) {
      CHECK(a.items[i].key == b.items[i].key);
      CHECK(b.items[i].pch == kjit::PchUse::none);
    }
    // The stored log holds no PCH message.
    kjit::Runtime rt(kjit::test::quiet_config(dir / "pch"));
    kjit::KernelLoader loader({.folders = {dir / "k"}, .use_environment = false, .use_installed = false}, rt);
    auto r = loader.compile("heavy1.cu", "", kjit::Arch::sm(90));
    CHECK(r.outcome == kjit::Outcome::hit);
    CHECK(r.log.find("precompiled") == std::string::npos);

    // Concurrent compiles with PCH (each in a folder of its own): all correct.
    kjit::WarmOptions parallel = with;
    parallel.jobs = 3;
    parallel.runtime = kjit::test::quiet_config(dir / "parallel");
    auto c = kjit::warm(parallel);
    REQUIRE(c.ok());
    for (std::size_t i = 0; i < 3; ++i) CHECK(c.items[i].key == b.items[i].key);
  }
}
