// kjit::prepare() and RuntimeConfig::prepare (KJIT_PREPARE): NVRTC made ready on a thread of its own
// changes no output (the same PTX, cubin, log and key as a compile in a process that prepared
// nothing), starts only when asked, and a process that ends or forks while it runs does so cleanly.
// Each case runs tests/tools/kjit_prepare_probe, a fresh process whose NVRTC nothing opened yet;
// random kernels, NVRTC compiles for sm_90 (no GPU needed). A probe that hangs is killed after a
// bound far above any compile: a hang is the failure, never a time.
#include <kjit/kjit.hpp>

#include "support/helpers.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"
#include "support/wait_process.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

const std::string k_probe = std::string(KJIT_TEST_TOOLS_DIR) + "/kjit_prepare_probe";

std::string read(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A kernel of random constants (its own key) written to `dir`/kernel.cu; -Xptxas=-v is not needed:
// NVRTC's log of a clean compile is what it is, and must be the same.
std::filesystem::path random_kernel(const std::filesystem::path& dir, std::mt19937& random) {
  std::uniform_int_distribution<int> value(2, 1000);
  const std::filesystem::path file = dir / "kernel.cu";
  std::ofstream(file) << "extern \"C\" __global__ void scale(float* x, int n) {\n"
                      << "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                      << "  if (i < n) x[i] = x[i] * " << value(random) << ".0f + " << value(random) << ";\n}\n"
                      << "template <typename T> __global__ void twice(T* x) { x[threadIdx.x] *= T(" << value(random)
                      << "); }\ntemplate __global__ void twice<float>(float*);\n";
  return file;
}

struct Probe {
  int code;
  std::string states;  // "idle running done"
  std::filesystem::path out;
};

Probe probe(const std::string& mode, const std::filesystem::path& source, const std::filesystem::path& out) {
  std::filesystem::create_directories(out);
  auto r = kjit::test::run_command(k_probe + " " + mode + " " + source.string() + " " + out.string());
  while (!r.out.empty() && r.out.back() == '\n') r.out.pop_back();
  return {r.code, r.out, out};
}

// Runs `args` as its own process; its exit status (128 + signal when killed), nullopt after 120 s.
std::optional<int> run_bounded(std::vector<std::string> args) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return kjit::test::wait_for(pid, std::chrono::seconds(120));
}

}  // namespace

TEST_SUITE("Runtime prepare") {
  TEST_CASE("NVRTC prepared ahead, by prepare() or by a Runtime, changes no PTX, cubin, log or key") {
    kjit::test::TempDir tmp;
    std::mt19937 random(std::random_device{}());
    for (int round = 0; round < 2; ++round) {
      const auto source = random_kernel(tmp / std::to_string(round), random);
      const Probe cold = probe("cold", source, tmp / std::to_string(round) / "cold");
      const Probe waited = probe("wait", source, tmp / std::to_string(round) / "wait");
      const Probe runtime = probe("runtime", source, tmp / std::to_string(round) / "runtime");
      REQUIRE(cold.code == 0);
      REQUIRE(waited.code == 0);
      REQUIRE(runtime.code == 0);
      // Nothing prepared without being asked; prepare(Wait::yes) returns done; a Runtime starts it.
      CHECK(cold.states == "idle idle idle");
      CHECK(waited.states == "idle done done");
      CHECK(runtime.states.starts_with("idle "));
      CHECK_FALSE(runtime.states.starts_with("idle idle"));
      CHECK(runtime.states.ends_with(" done"));
      for (const char* part : {"ptx", "cubin", "log", "key"}) {
        INFO("round ", round, ": ", part);
        const std::string want = read(cold.out / part);
        if (std::string(part) != "log") CHECK_FALSE(want.empty());
        CHECK(read(waited.out / part) == want);
        CHECK(read(runtime.out / part) == want);
      }
    }
  }

  TEST_CASE("a process that exits while NVRTC is being prepared exits cleanly") {
    std::mt19937 random(std::random_device{}());
    std::uniform_int_distribution<int> delay_us(0, 40000);  // before, during and after each step
    for (int i = 0; i < 12; ++i) {
      const int us = i == 0 ? 0 : delay_us(random);
      INFO("exit ", us, " us after prepare()");
      const auto status = run_bounded({k_probe, "exit", std::to_string(us)});
      REQUIRE(status.has_value());  // not hung at exit
      CHECK(*status == 0);          // no crash in NVRTC's destruction
    }
  }

  TEST_CASE("a child forked while NVRTC is being prepared compiles") {
    kjit::test::TempDir tmp;
    std::mt19937 random(std::random_device{}());
    std::uniform_int_distribution<int> delay_us(0, 40000);
    const auto source = random_kernel(tmp.path(), random);
    for (int i = 0; i < 8; ++i) {
      const int us = i == 0 ? 0 : delay_us(random);
      INFO("fork ", us, " us after prepare()");
      const auto status = run_bounded({k_probe, "fork", std::to_string(us), source.string()});
      REQUIRE(status.has_value());  // neither parent nor child hung on a lock the preparation held
      CHECK(*status == 0);
    }
  }

  TEST_CASE("KJIT_PREPARE is on unless set off and RuntimeConfig's field follows it") {
    {
      kjit::test::ScopedEnv unset("KJIT_PREPARE", nullptr);
      CHECK(kjit::RuntimeConfig::from_environment().prepare);
    }
    {
      kjit::test::ScopedEnv off("KJIT_PREPARE", "off");
      CHECK_FALSE(kjit::RuntimeConfig::from_environment().prepare);
    }
    {
      kjit::test::ScopedEnv bad("KJIT_PREPARE", "later");
      CHECK_THROWS_AS(kjit::RuntimeConfig::from_environment(), kjit::UsageError);
    }
    kjit::RuntimeConfig c;
    CHECK(c.prepare);
    c.set("prepare", "0");
    CHECK_FALSE(c.prepare);
    c.set("prepare", "on");
    CHECK(c.prepare);
  }
}
