// The kjit binary's diff / resources / sass commands, run as a user would (exit codes and
// output). Needs the kjit_cli target built (${KJIT_BINARY_DIR}/cli/kjit).
#include "support/temp_dir.hpp"
#include "test_inspect_kernels.hpp"

#include <kjit/tools/inspect.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace {

struct Run {
  int exit_code = -1;
  std::string out;  // stdout and stderr
};

std::filesystem::path kjit_binary() { return std::filesystem::path(KJIT_BINARY_DIR) / "cli" / "kjit"; }

Run run(const kjit::test::TempDir& dir, const std::string& args) {
  const std::string command = "cd '" + dir.path().string() + "' && '" + kjit_binary().string() + "' --cache-dir '" +
                              (dir / "cache").string() + "' " + args + " 2>&1";
  Run r;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe);
  char buffer[4096];
  std::size_t n = 0;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) r.out.append(buffer, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace

TEST_SUITE("inspect::Cli") {
  TEST_CASE("inspect::Cli: kjit diff, resources and sass: exit codes and output") {
    if (!std::filesystem::exists(kjit_binary())) {
      MESSAGE("kjit binary not built (" << kjit_binary().string() << "); build kjit_cli to run this test");
      return;
    }
    kjit::test::TempDir dir;
    std::string changed = kjit::test::k_gelu_source;
    changed.replace(changed.find("0.5f * v"), 8, "0.25f * v");
    kjit::test::write_file(dir / "a.cu", kjit::test::k_gelu_source);
    kjit::test::write_file(dir / "b.cu", changed);

    const Run same = run(dir, "diff a.cu a.cu --arch sm_90");
    CHECK(same.exit_code == 0);
    CHECK(same.out.find("== gelu (kernel): equal") != std::string::npos);

    const Run different = run(dir, "diff a.cu b.cu --arch sm_90 --color never");
    CHECK(different.exit_code == 1);
    CHECK(different.out.find("== gelu (kernel): different") != std::string::npos);
    CHECK(different.out.find("== softplus (kernel): equal") != std::string::npos);
    CHECK(different.out.find("+\tmul.f32 %f2, %f1, 0f3E800000;") != std::string::npos);
    CHECK(different.out.find("\x1b[") == std::string::npos);

    const Run colored = run(dir, "diff a.cu b.cu --arch sm_90 --color always");
    CHECK(colored.exit_code == 1);
    CHECK(colored.out.find("\x1b[32m+") != std::string::npos);

    const Run fast = run(dir, "--json diff a.cu --arch sm_90 --b-flags=--use_fast_math");
    CHECK(fast.exit_code == 1);
    const nlohmann::json j = nlohmann::json::parse(fast.out);
    CHECK(j["equal"] == false);
    bool tanh_appears = false;
    for (const auto& f : j["functions"]) {
      for (const auto& op : f["opcodes"]) tanh_appears |= op["key"] == "tanh.approx.f32" && op["a"] == 0 && op["b"] == 1;
    }
    CHECK(tanh_appears);

    const Run archs = run(dir, "diff a.cu --a-arch sm_80 --b-arch sm_90");
    CHECK(archs.exit_code == 1);
    CHECK(archs.out.find("+.target sm_90") != std::string::npos);

    const Run missing = run(dir, "diff nope.cu --arch sm_90");
    CHECK(missing.exit_code == 1);  // an input failed: kind io
    kjit::test::write_file(dir / "broken.cu", "extern \"C\" __global__ void k() { int x = ; }\n");
    const Run bad_source = run(dir, "diff a.cu broken.cu --arch sm_90");
    CHECK(bad_source.exit_code == 1);  // an input failed to compile

    kjit::test::write_file(dir / "hungry.cu", kjit::test::k_hungry_source);
    const Run table = run(dir, "resources hungry.cu --arch sm_90 -- --maxrregcount=24");
    CHECK(table.exit_code == 0);
    CHECK(table.out.find("hungry") != std::string::npos);
    CHECK(table.out.find("spill-st") != std::string::npos);
    const Run json = run(dir, "resources hungry.cu --arch sm_90 --json -- --maxrregcount=24");
    CHECK(json.exit_code == 0);
    const nlohmann::json usage = nlohmann::json::parse(json.out);
    REQUIRE(usage.size() == 1);
    CHECK(usage[0]["function"] == "hungry");
    CHECK(usage[0]["spill_stores"].get<int>() > 0);

    const Run sass = run(dir, "sass a.cu --arch sm_90 --kernel gelu");
    if (kjit::inspect::find_disassembler()) {
      CHECK(sass.exit_code == 0);
      CHECK(sass.out.find("gelu") != std::string::npos);
    } else {
      CHECK(sass.exit_code == 3);  // could not run here
      CHECK(sass.out.find("nvdisasm") != std::string::npos);
    }
  }
}
