#include "test_inspect_kernels.hpp"

#include <kjit/tools/inspect.hpp>

#include <doctest/doctest.h>

namespace ins = kjit::inspect;

namespace {

ins::KernelSummary find(const std::vector<ins::KernelSummary>& all, const std::string& name) {
  for (const ins::KernelSummary& s : all) {
    if (s.name == name) return s;
  }
  FAIL("no summary for " << name);
  return {};
}

}  // namespace

TEST_SUITE("inspect::KernelSummary") {
  TEST_CASE("inspect::KernelSummary: instructions are counted by full opcode and by base opcode") {
    const kjit::CompileResult r = kjit::test::compile_for_test("gelu.cu", kjit::test::k_gelu_source);
    const ins::KernelSummary s = find(ins::summarize(r.ptx), "gelu");
    CHECK(s.is_entry);
    CHECK(s.count("ld.global.f32") == 1);
    CHECK(s.count("st.global.f32") == 1);
    CHECK(s.count("ret") == 1);
    CHECK(s.count("bra") + s.count("bra.uni") >= 1);  // the guarded bra, predicate stripped
    CHECK(s.count("mul.f32") > 0);
    CHECK(s.count_prefix("ld.param") == 3);
    CHECK(s.base_opcodes().at("ld") == 4);
    int total = 0;
    for (const auto& [op, n] : s.base_opcodes()) total += n;
    CHECK(total == s.instruction_count());
    CHECK(!s.registers.empty());
    CHECK(ins::base_opcode("ex2.approx.ftz.f32") == "ex2");
    CHECK(ins::base_opcode("ret") == "ret");
  }

  TEST_CASE("inspect::KernelSummary: GELU with --use_fast_math: approximate transcendentals appear, the exact code goes") {
    const kjit::CompileResult exact = kjit::test::compile_for_test("gelu.cu", kjit::test::k_gelu_source);
    const kjit::CompileResult fast =
        kjit::test::compile_for_test("gelu.cu", kjit::test::k_gelu_source, {"--use_fast_math"});
    const ins::KernelSummary a = find(ins::summarize(exact.ptx), "gelu");
    const ins::KernelSummary b = find(ins::summarize(fast.ptx), "gelu");
    CHECK(a.count("tanh.approx.f32") == 0);
    CHECK(b.count("tanh.approx.f32") == 1);
    const ins::SummaryDelta d = ins::compare(a, b);
    const ins::CountDelta* tanh = d.find_opcode("tanh.approx.f32");
    REQUIRE(tanh);
    CHECK(tanh->a == 0);
    CHECK(tanh->b == 1);
    // The exact tanhf is a polynomial with an ex2-based branch: those instructions go.
    const ins::CountDelta* fma = d.find_opcode("fma.rn.f32");
    REQUIRE(fma);
    CHECK(fma->delta() < 0);
    const ins::CountDelta* copysign = d.find_opcode("copysign.f32");
    REQUIRE(copysign);
    CHECK(copysign->b == 0);
    CHECK(d.instructions_b < d.instructions_a);

    // softplus: logf's polynomial becomes lg2.approx.
    const ins::SummaryDelta sp = ins::compare(find(ins::summarize(exact.ptx), "softplus"),
                                              find(ins::summarize(fast.ptx), "softplus"));
    const ins::CountDelta* lg2 = sp.find_opcode("lg2.approx.ftz.f32");
    REQUIRE(lg2);
    CHECK(lg2->a == 0);
    CHECK(lg2->b >= 1);

    // The same facts through diff().
    const ins::DiffResult dr = ins::diff(exact, fast, ins::DiffOptions{.a_label = "exact", .b_label = "fast"});
    CHECK(!dr.equal());
    const std::string text = dr.to_text();
    CHECK(text.find("tanh.approx.f32") != std::string::npos);
    CHECK(text.find("+tanh.approx.f32") == std::string::npos);  // normalized text has spaces collapsed
    CHECK(text.find("+\ttanh.approx.f32 %f") != std::string::npos);
  }

  TEST_CASE("inspect::KernelSummary: #pragma unroll changes the instruction counts") {
    const kjit::CompileResult rolled = kjit::test::compile_for_test("dot.cu", kjit::test::unroll_source(false));
    const kjit::CompileResult unrolled = kjit::test::compile_for_test("dot.cu", kjit::test::unroll_source(true));
    const ins::KernelSummary a = find(ins::summarize(rolled.ptx), "dot8");
    const ins::KernelSummary b = find(ins::summarize(unrolled.ptx), "dot8");
    CHECK(a.count("ld.global.f32") == 2);   // one pair in the loop body
    CHECK(b.count("ld.global.f32") == 16);  // eight pairs
    CHECK(a.count_prefix("bra") > b.count_prefix("bra"));
    const ins::SummaryDelta d = ins::compare(a, b);
    const ins::CountDelta* loads = d.find_opcode("ld.global.f32");
    REQUIRE(loads);
    CHECK(loads->delta() == 14);
    CHECK(!ins::compare(a, b, ins::Grouping::base_opcode).opcodes.empty());
    CHECK(ins::compare(a, b, ins::Grouping::base_opcode).find_opcode("ld") != nullptr);
    CHECK(ins::compare(a, a).empty());
  }
}
