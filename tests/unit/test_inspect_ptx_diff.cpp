#include "test_inspect_kernels.hpp"

#include <kjit/tools/inspect.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

namespace ins = kjit::inspect;

TEST_SUITE("inspect::PtxDiff") {
  TEST_CASE("inspect::PtxDiff: the same build twice is equal, normalized and raw") {
    const kjit::CompileResult a = kjit::test::compile_for_test("gelu.cu", kjit::test::k_gelu_source);
    const kjit::CompileResult b = kjit::test::compile_for_test("gelu.cu", kjit::test::k_gelu_source);
    const ins::DiffResult d = ins::diff(a, b);
    CHECK(d.equal());
    CHECK(d.module_unified.empty());
    REQUIRE(d.functions.size() == 2);
    for (const ins::FunctionDiff& f : d.functions) {
      CHECK(f.equal());
      CHECK(f.unified.empty());
      CHECK(f.summary.empty());
    }
    CHECK(ins::diff(a, b, ins::DiffOptions{.raw = true}).equal());
    const std::string text = d.to_text();
    CHECK(text.find("== gelu (kernel): equal") != std::string::npos);
    CHECK(text.find("\nequal:") != std::string::npos);
    const nlohmann::json j = nlohmann::json::parse(d.to_json());
    CHECK(j["equal"] == true);
    CHECK(j["functions"].size() == 2);
    CHECK(j["functions"][0]["status"] == "equal");
  }

  TEST_CASE("inspect::PtxDiff: a changed kernel shows summary deltas and a unified diff - others stay equal") {
    const std::string src = kjit::test::k_gelu_source;
    std::string changed = src;
    changed.replace(changed.find("0.5f * v"), 8, "0.25f * v");
    const kjit::CompileResult a = kjit::test::compile_for_test("gelu.cu", src);
    const kjit::CompileResult b = kjit::test::compile_for_test("gelu.cu", changed);
    const ins::DiffResult d = ins::diff(a, b, ins::DiffOptions{.a_label = "old", .b_label = "new"});
    CHECK(!d.equal());
    REQUIRE(d.functions.size() == 2);
    CHECK(!d.functions[0].equal());
    CHECK(d.functions[1].equal());
    const std::string& u = d.functions[0].unified;
    CHECK(u.find("--- gelu (old)\n+++ gelu (new)\n@@ -") != std::string::npos);
    CHECK(u.find("\n-\tmul.f32 %f2, %f1, 0f3F000000;") != std::string::npos);
    CHECK(u.find("\n+\tmul.f32 %f2, %f1, 0f3E800000;") != std::string::npos);
    const std::string plain = d.to_text(ins::Color::never);
    CHECK(plain.find("\x1b[") == std::string::npos);
    CHECK(plain.find("different: 1 of 2 function(s)") != std::string::npos);
    const std::string colored = d.to_text(ins::Color::always);
    CHECK(colored.find("\x1b[32m+") != std::string::npos);
    CHECK(colored.find("\x1b[31m-") != std::string::npos);
    const nlohmann::json j = nlohmann::json::parse(d.to_json());
    CHECK(j["equal"] == false);
    CHECK(j["a"] == "old");
    CHECK(j["functions"][0]["status"] == "different");
    CHECK(j["functions"][1]["status"] == "equal");
  }

  TEST_CASE("inspect::PtxDiff: kernels present on one side only, and two archs") {
    const kjit::CompileResult a = kjit::test::compile_for_test("gelu.cu", kjit::test::k_gelu_source);
    const kjit::CompileResult b = kjit::test::compile_for_test("dot.cu", kjit::test::unroll_source(true));
    const ins::DiffResult d = ins::diff(a, b);
    CHECK(!d.equal());
    REQUIRE(d.functions.size() == 3);
    CHECK(d.functions[0].name == "gelu");
    CHECK(!d.functions[0].in_b);
    CHECK(d.functions[2].name == "dot8");
    CHECK(!d.functions[2].in_a);
    CHECK(d.to_text().find("only in b") != std::string::npos);

    const kjit::CompileResult a80 = kjit::test::compile_for_test("gelu.cu", kjit::test::k_gelu_source, {}, 80);
    const ins::DiffResult arch = ins::diff(a80, a);
    CHECK(!arch.equal());
    CHECK(arch.module_unified.find("-.target sm_80") != std::string::npos);
    CHECK(arch.module_unified.find("+.target sm_90") != std::string::npos);
  }

  TEST_CASE("inspect::PtxDiff: context lines are configurable") {
    std::string a = ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n";
    std::string b = a;
    for (int i = 0; i < 20; ++i) {
      a += "\tadd.s32 %r" + std::to_string(i + 1) + ", 1, 2;\n";
      b += i == 10 ? "\tsub.s32 %r11, 1, 2;\n" : "\tadd.s32 %r" + std::to_string(i + 1) + ", 1, 2;\n";
    }
    a += "}\n";
    b += "}\n";
    const ins::DiffResult d0 = ins::diff(a, b, ins::DiffOptions{.context = 0});
    REQUIRE(d0.functions.size() == 1);
    CHECK(d0.functions[0].unified.find("@@ -14,1 +14,1 @@\n-\tadd.s32 %r11, 1, 2;\n+\tsub.s32 %r11, 1, 2;\n") !=
          std::string::npos);
    const ins::DiffResult d3 = ins::diff(a, b);
    CHECK(d3.functions[0].unified.find("@@ -11,7 +11,7 @@") != std::string::npos);
    CHECK(d3.functions[0].summary.find_opcode("sub.s32")->b == 1);
  }
}
