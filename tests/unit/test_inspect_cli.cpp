// The kjit binary's diff / resources / sass commands, run as a user would (exit codes and
// output). Needs the kjit_cli target built (${KJIT_BINARY_DIR}/cli/kjit).
#include "support/temp_dir.hpp"
#include "support/skip.hpp"
#include "test_inspect_kernels.hpp"

#include <kjit/tools/inspect.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <string_view>

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
      KJIT_SKIP("kjit binary not built (" << kjit_binary().string() << "); build kjit_cli to run this test");
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

namespace {

std::string random_word(const char* prefix) {
  static std::mt19937 rng(std::random_device{}());
  return prefix + std::to_string(rng() % 1000000);
}

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// The numbers `kjit resources --json` gave for one function.
nlohmann::json row_of(const nlohmann::json& rows, const std::string& function) {
  for (const auto& r : rows) {
    if (r["function"] == function) return r;
  }
  return nullptr;
}

}  // namespace

TEST_SUITE("inspect::Cli") {
  TEST_CASE("inspect::Cli: kjit diff gives flags after -- to both sides and refuses them where both sides are one build") {
    if (!std::filesystem::exists(kjit_binary())) {
      KJIT_SKIP("kjit binary not built (" << kjit_binary().string() << "); build kjit_cli to run this test");
    }
    kjit::test::TempDir dir;
    const std::string need = random_word("NEED_");
    const std::string guard = "#ifndef " + need + "\n#error " + need + " is not defined\n#endif\n";
    kjit::test::write_file(dir / "a.cu", guard + "extern \"C\" __global__ void k(float* x) { x[0] = " + need + "; }\n");
    kjit::test::write_file(dir / "b.cu", guard + "extern \"C\" __global__ void k(float* x) { x[0] = " + need + " * x[1]; }\n");

    // Two files: both compile only with the define, and both labels say so.
    const Run both = run(dir, "diff a.cu b.cu --arch sm_90 --color never -- -D" + need + "=3");
    CAPTURE(both.out);
    CHECK(both.exit_code == 1);
    CHECK(has(both.out, "== k (kernel): different"));
    CHECK(has(both.out, "a: a.cu [--arch sm_90 -D" + need + "=3]"));
    CHECK(has(both.out, "b: b.cu [--arch sm_90 -D" + need + "=3]"));

    // One file and nothing that tells the sides apart: a usage error that says what to write.
    const Run same = run(dir, "diff a.cu --arch sm_90 -- -D" + need + "=1 --use_fast_math");
    CAPTURE(same.out);
    CHECK(same.exit_code == 2);
    CHECK(has(same.out, "--b-flags=\"-D" + need + "=1 --use_fast_math\""));
    CHECK(!has(same.out, "equal"));
    const Run same_json = run(dir, "--json diff a.cu --arch sm_90 -- -D" + need + "=1");
    CHECK(same_json.exit_code == 2);
    CHECK(nlohmann::json::parse(same_json.out)["error"]["kind"] == "usage");

    // One file with a side of its own: the common flags go to both.
    const Run sided = run(dir, "diff a.cu --arch sm_90 --b-flags=--use_fast_math -- -D" + need + "=2");
    CAPTURE(sided.out);
    CHECK(sided.exit_code == 0);
    CHECK(has(sided.out, "a: a.cu [--arch sm_90 -D" + need + "=2]"));
    CHECK(has(sided.out, "b: b.cu") == false);
    CHECK(has(sided.out, "b: a.cu [--arch sm_90 --use_fast_math -D" + need + "=2]"));
  }

  TEST_CASE("inspect::Cli: a file of templates only is nothing to compare for kjit diff and kjit resources warns") {
    if (!std::filesystem::exists(kjit_binary())) {
      KJIT_SKIP("kjit binary not built (" << kjit_binary().string() << "); build kjit_cli to run this test");
    }
    kjit::test::TempDir dir;
    const std::string ns = random_word("space");
    kjit::test::write_file(dir / "t.cu", "namespace " + ns + " {\ntemplate <class T>\n__global__ void twice(T* x) "
                                         "{ x[threadIdx.x] = x[threadIdx.x] * T(2); }\n}  // namespace\n");
    const Run diff = run(dir, "diff t.cu --arch sm_90 --b-flags=--use_fast_math");
    CAPTURE(diff.out);
    CHECK(diff.exit_code == 1);
    CHECK(has(diff.out, "nothing compared"));
    CHECK(!has(diff.out, "equal:"));
    CHECK(has(diff.out, "warning: t.cu: no kernels; a template needs --instantiate"));
    const Run json = run(dir, "--json -q diff t.cu --arch sm_90 --b-flags=--use_fast_math");
    CHECK(json.exit_code == 1);
    CHECK(nlohmann::json::parse(json.out)["equal"] == false);

    const Run resources = run(dir, "resources t.cu --arch sm_90");
    CAPTURE(resources.out);
    CHECK(resources.exit_code == 0);
    CHECK(has(resources.out, "warning: t.cu: no kernels; a template needs --instantiate"));
    // Instantiated, there is a kernel to show, and no warning.
    const Run one = run(dir, "resources t.cu --arch sm_90 --instantiate '" + ns + "::twice<float>'");
    CAPTURE(one.out);
    CHECK(one.exit_code == 0);
    CHECK(has(one.out, ns + "::twice<float>"));
    CHECK(!has(one.out, "warning"));
  }

  TEST_CASE("inspect::Cli: the --instantiate hint names a template kernel with its namespace and following it works") {
    if (!std::filesystem::exists(kjit_binary())) {
      KJIT_SKIP("kjit binary not built (" << kjit_binary().string() << "); build kjit_cli to run this test");
    }
    kjit::test::TempDir dir;
    const std::string ns = random_word("space");
    kjit::test::write_file(dir / "t.cu", "namespace " + ns + " {\nstruct Op {};\ntemplate <class T, int N = 2>\n"
                                         "__global__ void __launch_bounds__(256) scale(T* x) { x[threadIdx.x] *= N; }\n}\n");
    const Run hint = run(dir, "ptx t.cu --arch sm_90");
    CAPTURE(hint.out);
    CHECK(has(hint.out, "a template needs --instantiate '" + ns + "::scale<...>'"));

    // Unqualified, NVRTC cannot parse it: the error names the qualified expression.
    const Run bare = run(dir, "ptx t.cu --arch sm_90 --instantiate 'scale<float>'");
    CAPTURE(bare.out);
    CHECK(bare.exit_code == 1);
    CHECK(has(bare.out, "name it \"" + ns + "::scale<float>\""));

    const Run followed = run(dir, "ptx t.cu --arch sm_90 --instantiate '" + ns + "::scale<float>' --kernel '" + ns +
                                      "::scale<float>'");
    CAPTURE(followed.out);
    CHECK(followed.exit_code == 0);
    CHECK(has(followed.out, ".entry "));
  }

  TEST_CASE("inspect::Cli: C++ kernels by their plain names in kjit ptx --kernel and demangled in resources and diff") {
    if (!std::filesystem::exists(kjit_binary())) {
      KJIT_SKIP("kjit binary not built (" << kjit_binary().string() << "); build kjit_cli to run this test");
    }
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "sq.cu", R"(
__global__ void square_matrix_kernel(const float* in, float* out, int w, int h) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < w * h) out[i] = in[i] * in[i];
}
__global__ void over(float* x) { x[0] = 1.0f; }
__global__ void over(int* x) { x[0] = 1; }
)");
    const Run ptx = run(dir, "ptx sq.cu --arch sm_90 --kernel square_matrix_kernel");
    CAPTURE(ptx.out);
    CHECK(ptx.exit_code == 0);
    CHECK(has(ptx.out, ".entry _Z20square_matrix_kernelPKfPfii"));
    CHECK(!has(ptx.out, "_Z4overPf"));

    const Run overloaded = run(dir, "ptx sq.cu --arch sm_90 --kernel over");
    CAPTURE(overloaded.out);
    CHECK(overloaded.exit_code == 2);
    CHECK(has(overloaded.out, "over(float*) (_Z4overPf)"));
    CHECK(has(overloaded.out, "over(int*) (_Z4overPi)"));
    const Run missing = run(dir, "ptx sq.cu --arch sm_90 --kernel nope");
    CHECK(missing.exit_code == 2);
    CHECK(has(missing.out, "square_matrix_kernel (_Z20square_matrix_kernelPKfPfii)"));

    const Run table = run(dir, "resources sq.cu --arch sm_90");
    CAPTURE(table.out);
    CHECK(table.exit_code == 0);
    CHECK(has(table.out, "\nsquare_matrix_kernel "));
    CHECK(has(table.out, "\nover(float*) "));
    CHECK(has(table.out, "\nover(int*) "));
    CHECK(!has(table.out, "_Z"));
    const Run json = run(dir, "--json resources sq.cu --arch sm_90");
    const nlohmann::json rows = nlohmann::json::parse(json.out);
    CHECK(row_of(rows, "square_matrix_kernel")["symbol"] == "_Z20square_matrix_kernelPKfPfii");

    const Run diff = run(dir, "diff sq.cu --arch sm_90 --b-flags=--use_fast_math --color never");
    CAPTURE(diff.out);
    CHECK(has(diff.out, "== square_matrix_kernel (kernel)"));
    CHECK(has(diff.out, "== over(int*) (kernel)"));
  }

  TEST_CASE("inspect::Cli: kjit resources reads local and constant memory and max threads from the cubin") {
    if (!std::filesystem::exists(kjit_binary())) {
      KJIT_SKIP("kjit binary not built (" << kjit_binary().string() << "); build kjit_cli to run this test");
    }
    kjit::test::TempDir dir;
    const std::string bound = std::to_string(32 * (1 + std::random_device{}() % 32));  // 32..1024
    kjit::test::write_file(dir / "k.cu", std::string(kjit::test::k_hungry_source) +
                                             "extern \"C\" __global__ void __launch_bounds__(" + bound +
                                             ") bounded(float* x) { x[threadIdx.x] *= 3.0f; }\n"
                                             "__constant__ float table[100];\n"
                                             "extern \"C\" __global__ void plain(float* x) { x[threadIdx.x] = table[3]; }\n");
    const Run json = run(dir, "--json resources k.cu --arch sm_90 -- --maxrregcount=32");
    CAPTURE(json.out);
    REQUIRE(json.exit_code == 0);
    const nlohmann::json rows = nlohmann::json::parse(json.out);
    const nlohmann::json hungry = row_of(rows, "hungry"), bounded = row_of(rows, "bounded"), plain = row_of(rows, "plain");
    REQUIRE(hungry.is_object());
    REQUIRE(bounded.is_object());
    REQUIRE(plain.is_object());
    // Spilled: its local memory is its stack frame (no calls), as the driver's LOCAL_SIZE_BYTES.
    CHECK(hungry["spill_stores"].get<int>() > 0);
    CHECK(hungry["local"].get<int>() > 0);
    CHECK(hungry["local"] == hungry["stack_frame"]);
    CHECK(plain["local"] == 0);
    CHECK(bounded["max_threads_per_block"] == std::stoi(bound));
    CHECK(hungry["max_threads_per_block"] == 1024);  // 32 registers: a full block
    for (const auto* r : {&hungry, &bounded, &plain}) CHECK((*r)["constant"].get<int>() > 0);  // bank 0: parameters
    const Run table = run(dir, "resources k.cu --arch sm_90 -- --maxrregcount=32");
    CAPTURE(table.out);
    for (std::string_view line : {std::string_view("hungry"), std::string_view("bounded")}) {
      const std::size_t at = table.out.find("\n" + std::string(line) + " ");
      REQUIRE(at != std::string::npos);
      const std::string row = table.out.substr(at + 1, table.out.find('\n', at + 1) - at - 1);
      CHECK(!has(row, " - "));
      CHECK(!row.ends_with(" -"));
    }
    CHECK(has(table.out, "  " + bound + "\n"));

    // The same bytes ptxas reports where it still does (sm_80: cmem[0]) and nvcc's own stack frame.
    const std::filesystem::path nvcc = "/usr/local/cuda/bin/nvcc";
    const Run sm80 = run(dir, "--json resources k.cu --arch sm_80 -- --maxrregcount=32");
    REQUIRE(sm80.exit_code == 0);
    if (std::filesystem::exists(nvcc)) {
      const std::string command = "cd '" + dir.path().string() + "' && '" + nvcc.string() +
                                  "' -cubin -arch=sm_80 -maxrregcount=32 -Xptxas=-v k.cu -o k.cubin 2>&1";
      FILE* pipe = popen(command.c_str(), "r");
      REQUIRE(pipe);
      std::string log;
      char buffer[4096];
      std::size_t n = 0;
      while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) log.append(buffer, n);
      REQUIRE(pclose(pipe) == 0);
      const auto reference = kjit::inspect::parse_ptxas_log(log);
      for (const char* name : {"hungry", "bounded", "plain"}) {
        CAPTURE(name);
        const auto expected = kjit::inspect::find_usage(reference, name);
        REQUIRE(expected);
        REQUIRE(expected->constant);
        const nlohmann::json got = row_of(nlohmann::json::parse(sm80.out), name);
        CHECK(got["constant"] == *expected->constant);
        CHECK(got["local"] == expected->stack_frame);
      }
    }
  }
}
