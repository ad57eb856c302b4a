// kjit compile --link / --lto and --instantiate: the CLI links .cu files and prebuilt device
// code into one cubin through the cache, reports a refused link as a link error (exit 1, the
// inputs named), and takes name expressions on compile, ptx, sass, resources and diff.
#include "support/helpers.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace {

const std::string k_kjit = std::string(KJIT_BINARY_DIR) + "/cli/kjit";

kjit::test::CommandResult run(const std::string& args) {
  return kjit::test::run_command(k_kjit + " " + args + " 2>/dev/null");
}

const char* k_caller =
    "extern __device__ float twice(float v);\n"
    "extern \"C\" __global__ void apply(float* x, int n) { int i = threadIdx.x; if (i < n) x[i] = twice(x[i]); }\n"
    "template <class T> __global__ void axpy(T a, T* x, int n) { int i = threadIdx.x; if (i < n) x[i] = a * x[i]; }\n";
const char* k_callee = "__device__ float twice(float v) { return 2.0f * v; }\n";

}  // namespace

TEST_SUITE("cli") {
  TEST_CASE("compile --link writes one cubin and is a hit the second time") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "a.cu", k_caller);
    kjit::test::write_file(dir / "b.cu", k_callee);
    const std::string args = fmt::format("--cache-dir {} --json compile --arch sm_90 --link -o {} {} {}",
                                         (dir / "cache").string(), (dir / "out").string(), (dir / "a.cu").string(),
                                         (dir / "b.cu").string());
    auto first = run(args);
    REQUIRE_MESSAGE(first.code == 0, first.out);
    auto j = nlohmann::json::parse(first.out).at(0);
    CHECK(j["outcome"] == "compiled");
    // The whole request (two programs compiled, then linked) encloses nvJitLink's step.
    CHECK(j["ms"].get<double>() >= j["link_ms"].get<double>());
    CHECK(j["cubin_bytes"].get<std::size_t>() > 0);
    CHECK(std::filesystem::file_size(dir / "out" / "a.cubin") == j["cubin_bytes"].get<std::size_t>());
    auto second = nlohmann::json::parse(run(args).out).at(0);
    CHECK(second["outcome"] == "hit");
    CHECK(second["key"] == j["key"]);

    // --lto: another key, linked.
    auto lto = run(args + " --lto");
    REQUIRE(lto.code == 0);
    auto jl = nlohmann::json::parse(lto.out).at(0);
    CHECK(jl["outcome"] == "compiled");
    CHECK(jl["key"] != j["key"]);

    // A prebuilt cubin beside a .cu file.
    auto part = run(fmt::format("--cache-dir {} compile --arch sm_90 -o {} --emit cubin {} -- -rdc=true",
                                (dir / "cache").string(), (dir / "parts").string(), (dir / "b.cu").string()));
    REQUIRE(part.code == 0);
    auto mixed = run(fmt::format("--cache-dir {} --json compile --arch sm_90 --link {} {}", (dir / "cache").string(),
                                 (dir / "a.cu").string(), (dir / "parts" / "b.cubin").string()));
    CHECK(mixed.code == 0);
  }

  TEST_CASE("a refused link is a link error naming the inputs with exit code 1") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "a.cu", k_caller);
    auto r = run(fmt::format("--cache-dir {} --json compile --arch sm_90 --link {}", (dir / "cache").string(),
                             (dir / "a.cu").string()));
    CHECK(r.code == 1);
    const auto all = nlohmann::json::parse(r.out);
    INFO(r.out);
    REQUIRE(all.is_array());  // compile prints an array, also for a link that failed
    const auto& j = all.at(0);
    CHECK(j["error"]["kind"] == "link");
    CHECK(j["error"]["log"].get<std::string>().find("_Z5twicef") != std::string::npos);
    CHECK(j["error"]["inputs"].at(0).get<std::string>().find("a.cu") != std::string::npos);
    kjit::test::write_file(dir / "notes.txt", "x");
    auto bad = run(fmt::format("--cache-dir {} --json compile --arch sm_90 --link {} {}", (dir / "cache").string(),
                               (dir / "a.cu").string(), (dir / "notes.txt").string()));
    CHECK(bad.code == 2);
  }

  TEST_CASE("--instantiate names template kernels for compile ptx sass resources and diff") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "t.cu", k_caller + std::string(k_callee));
    const std::string cache = "--cache-dir " + (dir / "cache").string();
    const std::string file = (dir / "t.cu").string();
    auto ptx = run(fmt::format("{} ptx --arch sm_90 --instantiate 'axpy<float>' --kernel 'axpy<float>' {}", cache, file));
    REQUIRE(ptx.code == 0);
    CHECK(ptx.out.find(".entry _Z4axpyIfEvT_PS0_i") != std::string::npos);
    CHECK(ptx.out.find("apply") == std::string::npos);  // only the one asked for
    auto without = run(fmt::format("{} ptx --arch sm_90 {}", cache, file));
    CHECK(without.out.find("axpy") == std::string::npos);  // a template is not instantiated by itself
    auto compiled = run(fmt::format("{} --json compile --arch sm_90 --instantiate 'axpy<float>' --instantiate "
                                    "'axpy<double>' {}", cache, file));
    REQUIRE(compiled.code == 0);
    auto res = run(fmt::format("{} --json resources --arch sm_90 --instantiate 'axpy<double>' {}", cache, file));
    REQUIRE(res.code == 0);
    CHECK(res.out.find("_Z4axpyIdEvT_PS0_i") != std::string::npos);
    auto diff = run(fmt::format("{} diff --arch sm_90 --instantiate 'axpy<float>' --a-flags=-DX=1 {}", cache, file));
    CHECK(diff.code == 0);  // the same code on both sides
  }
}
