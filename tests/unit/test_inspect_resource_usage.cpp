#include "test_inspect_kernels.hpp"

#include <kjit/tools/inspect.hpp>

#include "support/helpers.hpp"

#include "core/compile/nvrtc/nvrtc_info.hpp"

#include <doctest/doctest.h>

#include <cstdio>

namespace ins = kjit::inspect;

TEST_SUITE("inspect::ResourceUsage") {
  TEST_CASE("inspect::ResourceUsage: ptxas verbose output is parsed per function") {
    const char* log = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k' for 'sm_90'
ptxas info    : Function properties for k
ptxas         .     528 bytes stack frame, 644 bytes spill stores, 820 bytes spill loads
ptxas info    : Used 24 registers, used 1 barriers, 528 bytes cumulative stack size, 1024 bytes smem, 360 bytes cmem[0], 8 bytes cmem[2], 16 bytes lmem
ptxas info    : Compile time = 32.949 ms
ptxas info    : Function properties for _Z1hf
    40 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
)";
    const std::vector<ins::ResourceUsage> u = ins::parse_ptxas_log(log);
    REQUIRE(u.size() == 2);
    CHECK(u[0].function == "k");
    CHECK(u[0].arch == "sm_90");
    CHECK(u[0].is_entry);
    CHECK(u[0].registers == 24);
    CHECK(u[0].barriers == 1);
    CHECK(u[0].stack_frame == 528);
    CHECK(u[0].spill_stores == 644);
    CHECK(u[0].spill_loads == 820);
    CHECK(u[0].cumulative_stack == 528);
    CHECK(u[0].shared == 1024);
    CHECK(u[0].constant == 368);
    CHECK(u[0].local == 16);
    CHECK(u[0].spills());
    CHECK(u[1].function == "_Z1hf");
    CHECK(!u[1].is_entry);
    CHECK(u[1].stack_frame == 40);
    CHECK(!u[1].spills());
    CHECK(ins::find_usage(u, "_Z1hf"));
    CHECK(!ins::find_usage(u, "nope"));
    CHECK(ins::parse_ptxas_log("").empty());
    CHECK(ins::parse_ptxas_log("warning: something\nUsed 3 registers").empty());
  }

  TEST_CASE("inspect::ResourceUsage: a kernel forced under its register need spills - without the limit it does not") {
    kjit::Runtime rt(kjit::RuntimeConfig{.cache_disabled = true});
    const kjit::Program p("hungry.cu", kjit::test::k_hungry_source);
    const auto free = kjit::test::resource_usage_of(rt, p, kjit::CompileOptions{.arch = kjit::Arch::sm(90)});
    const auto tight = kjit::test::resource_usage_of(rt, p, kjit::CompileOptions{.arch = kjit::Arch::sm(90), .flags = {"--maxrregcount=24"}});
    const auto a = ins::find_usage(free, "hungry");
    const auto b = ins::find_usage(tight, "hungry");
    REQUIRE(a);
    REQUIRE(b);
    CHECK(a->is_entry);
    CHECK(a->arch == "sm_90");
    CHECK(a->registers > 24);
    CHECK(!a->spills());
    CHECK(b->registers <= 24);
    CHECK(b->spills());
    CHECK(b->spill_stores > 0);
    CHECK(b->spill_loads > 0);
    CHECK(b->stack_frame > 0);

    const std::string table = ins::resources_table(tight);
    CHECK(table.find("hungry") != std::string::npos);
    CHECK(table.find("spill-st") != std::string::npos);
    const std::string json = ins::resources_json(tight);
    CHECK(json.find("\"spill_stores\"") != std::string::npos);

    // The diff reports the spill as a resource delta.
    const kjit::CompileResult ra = rt.compile(p, kjit::CompileOptions{.arch = kjit::Arch::sm(90), .flags = {"-Xptxas=-v"}});
    const kjit::CompileResult rb =
        rt.compile(p, kjit::CompileOptions{.arch = kjit::Arch::sm(90), .max_registers = 24, .flags = {"-Xptxas=-v"}});
    const ins::DiffResult d = ins::diff(ra, rb);
    REQUIRE(d.functions.size() == 1);
    const ins::FunctionDiff& f = d.functions[0];
    REQUIRE(f.b.resources);
    CHECK(f.b.resources->spills());
    bool spill_delta = false;
    for (const ins::CountDelta& c : f.summary.resources) spill_delta |= c.key == "spill_stores" && c.a == 0 && c.b > 0;
    CHECK(spill_delta);
    CHECK(d.to_text().find("spill_stores") != std::string::npos);
  }

  TEST_CASE("inspect::ResourceUsage: every compile carries ptxas's report, also with --no-cache given twice") {
    // NVRTC 12.9+ would serve a repeated compile from its own cache where a driver is installed,
    // without ptxas's report; kjit turns that cache off and must not pass the flag twice.
    kjit::Runtime rt(kjit::RuntimeConfig{.cache_disabled = true});
    const kjit::Program p("k.cu", kjit::test::k_gelu_source);
    for (const auto& flags : {std::vector<std::string>{}, std::vector<std::string>{"--no-cache"}}) {
      for (int round = 0; round < 2; ++round) {
        CAPTURE(round);
        const auto u = kjit::test::resource_usage_of(rt, p, kjit::CompileOptions{.arch = kjit::Arch::sm(90), .flags = flags});
        REQUIRE(ins::find_usage(u, "gelu"));
        CHECK(ins::find_usage(u, "gelu")->registers > 0);
      }
    }
    int major = 0, minor = 0;
    REQUIRE(std::sscanf(kjit::nvrtc_version().c_str(), "%d.%d", &major, &minor) == 2);
    CHECK(kjit::compile::NvrtcInfo::has_own_cache() == (major > 12 || (major == 12 && minor >= 9)));
  }

  TEST_CASE("inspect::ResourceUsage: a virtual arch is refused: ptxas does not run") {
    kjit::Runtime rt(kjit::RuntimeConfig{.cache_disabled = true});
    CHECK_THROWS_AS(kjit::test::resource_usage_of(rt, kjit::Program("k.cu", kjit::test::k_gelu_source),
                                        kjit::CompileOptions{.arch = kjit::Arch::compute(90)}),
                    kjit::UsageError);
  }
}
