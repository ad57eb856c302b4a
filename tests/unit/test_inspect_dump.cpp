#include "test_inspect_kernels.hpp"

#include "support/temp_dir.hpp"

#include <kjit/tools/inspect.hpp>

#include "tools/inspect/dump_hook.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

namespace ins = kjit::inspect;

TEST_SUITE("inspect::Dump") {
  TEST_CASE("inspect::Dump: a dump folder holds source, options, headers, PTX, cubin, log, resources and SASS or a note") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::RuntimeConfig{.cache_disabled = true});
    const kjit::Program p = kjit::Program("my kernels/gelu.cu", std::string("#include \"common.cuh\"\n") + kjit::test::k_gelu_source)
                                .header("common.cuh", "#define SCALE 2\n");
    const kjit::CompileResult r = rt.compile(p, kjit::CompileOptions{.arch = kjit::Arch::sm(90), .flags = {"-Xptxas=-v"}});
    const std::filesystem::path out = ins::write_dump(dir.path(), p, r);
    CHECK(out.parent_path() == dir.path());
    CHECK(out.filename() == "my_kernels_gelu.cu-" + r.key.substr(0, 16));
    CHECK(out.filename() == ins::dump_folder_name(p, r));
    CHECK(kjit::test::read_file(out / "source.cu") == p.source());
    CHECK(kjit::test::read_file(out / "kernel.ptx") == r.ptx);
    CHECK(kjit::test::read_file(out / "kernel.cubin") == r.cubin);
    CHECK(kjit::test::read_file(out / "compile.log") == r.log);
    CHECK(kjit::test::read_file(out / "headers.txt").find("common.cuh\theaders/") == 0);
    CHECK(kjit::test::read_file(out / "options.txt").find("sm_90") != std::string::npos);
    CHECK(kjit::test::read_file(out / "resources.txt").find("gelu") != std::string::npos);
    CHECK(kjit::test::read_file(out / "resources.json").find("\"registers\"") != std::string::npos);
    // What CUDA 13's ptxas no longer reports comes from the cubin, as in `kjit resources`.
    const nlohmann::json usage = nlohmann::json::parse(kjit::test::read_file(out / "resources.json"));
    REQUIRE(!usage.empty());
    for (const auto& row : usage) {
      CHECK(row["local"].is_number());
      CHECK(row["constant"].is_number());
      CHECK(row["max_threads_per_block"] == 1024);
    }
    const std::string info = kjit::test::read_file(out / "info.json");
    CHECK(info.find(r.key) != std::string::npos);
    CHECK(info.find("\"softplus\"") != std::string::npos);
    if (ins::find_disassembler()) {
      CHECK(kjit::test::read_file(out / "kernel.sass").find("gelu") != std::string::npos);
    } else {
      CHECK(kjit::test::read_file(out / "sass-unavailable.txt").find("nvdisasm") != std::string::npos);
    }
    // Dumping again replaces the files.
    CHECK(ins::write_dump(dir.path(), p, r, ins::DumpSass::no) == out);
  }

  TEST_CASE("inspect::Dump: a PTX-only result without ptxas output says so") {
    kjit::test::TempDir dir;
    const kjit::Program p("k.cu", kjit::test::k_gelu_source);
    kjit::Runtime rt(kjit::RuntimeConfig{.cache_disabled = true});
    const kjit::CompileResult r = rt.compile(p, kjit::CompileOptions{.arch = kjit::Arch::compute(90)});
    const std::filesystem::path out = ins::write_dump(dir.path(), p, r);
    CHECK(!std::filesystem::exists(out / "kernel.cubin"));
    CHECK(kjit::test::read_file(out / "resources.txt").find("-Xptxas=-v") != std::string::npos);
    CHECK(kjit::test::read_file(out / "sass-unavailable.txt").find("no cubin") != std::string::npos);
  }

  TEST_CASE("inspect::Dump: an unwritable dump root throws IoError naming it") {
    kjit::test::TempDir dir;
    kjit::test::write_file(dir / "file", "x");
    const kjit::Program p("k.cu", "");
    kjit::CompileResult r;
    r.key = "0123456789abcdef0123456789abcdef";
    CHECK_THROWS_AS(ins::write_dump(dir / "file", p, r), kjit::IoError);
  }
}
