// kjit::Arch and the canonical marshalling of kjit::CompileOptions.
#include <kjit/compile_options.hpp>
#include <kjit/error.hpp>
#include "core/compile/options/option_marshalling.hpp"

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

using kjit::Arch;
using kjit::CompileOptions;

TEST_SUITE("CompileOptions") {
  TEST_CASE("Arch::parse accepts the usual spellings and refuses others") {
    CHECK(Arch::parse("sm_90") == Arch::sm(90));
    CHECK(Arch::parse("90") == Arch::sm(90));
    CHECK(Arch::parse("compute_80") == Arch::compute(80));
    CHECK(Arch::parse("native").is_native());
    CHECK(Arch::parse("sm_90a").str() == "sm_90a");
    CHECK(Arch::parse("compute_90").is_virtual());
    CHECK_THROWS_AS(Arch::parse("sm90"), kjit::UsageError);
    CHECK_THROWS_AS(Arch::parse("gpu"), kjit::UsageError);
    CHECK_THROWS_AS(Arch::parse("sm_"), kjit::UsageError);
    CHECK_THROWS_WITH(Arch::parse("volta"), doctest::Contains("volta"));
  }

  TEST_CASE("typed fields marshal to one canonical list") {
    CompileOptions o{.arch = Arch::sm(90), .std = "c++20", .defines = {"N=4", "FAST"}, .include_dirs = {"/inc"},
                     .fast_math = true, .line_info = true, .max_registers = 32};
    auto flags = kjit::canonical_flags(o, Arch::sm(90));
    std::vector<std::string> expected = {"--gpu-architecture=sm_90", "--std=c++20", "--use_fast_math",
                                         "--generate-line-info", "--maxrregcount=32",
                                         "--pre-include=__kjit_nvcc.h",  // the nvcc environment
                                         "--define-macro=N=4",
                                         "--define-macro=FAST", "--include-path=/inc"};
    CHECK(flags == expected);
  }

  TEST_CASE("raw spellings fold into the typed fields and marshal identically") {
    CompileOptions typed{.arch = Arch::sm(80), .std = "c++17", .defines = {"X=1"}, .include_dirs = {"/a"},
                         .fast_math = true, .max_registers = 64};
    CompileOptions raw{.flags = {"-use_fast_math", "-DX=1", "-I", "/a", "-arch=sm_80", "--maxrregcount=64",
                                 "-std=c++17", "-O2"}};
    CHECK(kjit::normalized(raw).arch == Arch::sm(80));
    CHECK(kjit::canonical_flags(typed, Arch::sm(80)) == kjit::canonical_flags(raw, kjit::normalized(raw).arch));
    CompileOptions raw2{.flags = {"--use_fast_math", "--define-macro=X=1", "--include-path=/a", "-maxrregcount",
                                  "64", "-DX=1"}};
    CHECK(kjit::canonical_flags(raw2, Arch::sm(80)) == kjit::canonical_flags(typed, Arch::sm(80)));
  }

  TEST_CASE("unknown raw flags pass through in order and and bad values are refused") {
    CompileOptions o{.flags = {"--extra-device-vectorization", "-Xptxas", "-v"}};
    auto flags = kjit::canonical_flags(o, Arch::sm(90));
    CHECK(flags[flags.size() - 2] == "--extra-device-vectorization");
    CHECK(flags.back() == "--ptxas-options=-v");
    CHECK_THROWS_AS(kjit::canonical_flags(CompileOptions{.flags = {"-maxrregcount=lots"}}, Arch::sm(90)),
                    kjit::UsageError);
    // -O0 is nvcc's host optimization level: dropped (with a warning, test_options_nvcc_flags.cpp).
    CHECK(kjit::canonical_flags(CompileOptions{.flags = {"-O0"}}, Arch::sm(90)) ==
          kjit::canonical_flags(CompileOptions{}, Arch::sm(90)));
    CHECK_THROWS_AS(kjit::canonical_flags(CompileOptions{.flags = {"--bogus-flag"}}, Arch::sm(90)), kjit::UsageError);
    CHECK_THROWS_AS(kjit::canonical_flags(CompileOptions{.std = "c++98"}, Arch::sm(90)), kjit::UsageError);
    CHECK_THROWS_AS(kjit::canonical_flags(CompileOptions{.flags = {"-I"}}, Arch::sm(90)), kjit::UsageError);
    CHECK_THROWS_AS(kjit::canonical_flags(CompileOptions{}, Arch::native()), kjit::UsageError);
  }

  TEST_CASE("a link's parts take its options normalized once made relocatable: the flags normalizing again gave") {
    // Random raw option sets, read once by normalize(); a part's options then add -rdc=true (and
    // -dlto) as normalize() spells them, which must marshal as normalizing everything again did.
    const std::vector<std::string> pool = {"-rdc=true", "-dc", "--relocatable-device-code=true", "-dlto",
                                           "--dlink-time-opt", "-use_fast_math", "-lineinfo", "-DX=1", "-I/inc",
                                           "--ftz=true", "--ptxas-options=-v", "-arch=sm_80", "-std=c++17",
                                           "--extra-device-vectorization", "-rdc=false", "-G"};
    std::mt19937_64 rng(97);
    for (int round = 0; round < 300; ++round) {
      CompileOptions o;
      const std::size_t n = rng() % 7;
      for (std::size_t i = 0; i < n; ++i) o.flags.push_back(pool[rng() % pool.size()]);
      if (rng() % 2 == 0) o.defines.push_back("N=" + std::to_string(rng() % 100));
      std::string text;
      for (const auto& f : o.flags) text += f + " ";
      for (bool lto : {false, true}) {
        INFO("flags: ", text, "lto ", lto);
        const auto once = kjit::compile::marshal(kjit::compile::normalize(o).relocatable(lto), Arch::sm(90));
        std::vector<std::string> more{"-rdc=true"};
        if (lto) more.emplace_back("-dlto");
        CHECK(once == kjit::canonical_flags(kjit::normalized(o).with_flags(more), Arch::sm(90)));
      }
    }
  }
}
