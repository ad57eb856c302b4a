#include "test_inspect_kernels.hpp"

#include <kjit/tools/inspect.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <map>
#include <regex>
#include <string>

namespace ins = kjit::inspect;

namespace {

// Renumbers every virtual register of a real PTX text (reversed and shifted within each
// class, declarations grown to match) and every $L__BB label, as a different compiler
// run could; the code itself stays the same.
std::string renumber(const std::string& ptx) {
  std::map<std::string, int> declared;  // class -> N of %cls<N>
  const std::regex decl(R"(%([a-z]+)<(\d+)>)");
  for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), decl); it != std::sregex_iterator(); ++it) {
    declared[(*it)[1]] = std::max(declared[(*it)[1]], std::stoi((*it)[2]));
  }
  const std::regex token(R"(%([a-z]+)(\d+)\b|%([a-z]+)<(\d+)>|\$L__BB(\d+)_(\d+))");
  std::string out;
  std::size_t last = 0;
  for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), token); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    out.append(ptx, last, static_cast<std::size_t>(m.position(0)) - last);
    last = static_cast<std::size_t>(m.position(0) + m.length(0));
    if (m[1].matched && declared.count(m[1])) {
      out += fmt::format("%{}{}", m[1].str(), declared[m[1]] + 10 - std::stoi(m[2]));
    } else if (m[3].matched && declared.count(m[3])) {
      out += fmt::format("%{}<{}>", m[3].str(), std::stoi(m[4]) + 10);
    } else if (m[5].matched) {
      out += "$L__BB" + m[5].str() + "_" + std::to_string(std::stoi(m[6]) * 3 + 11);
    } else {
      out += m.str(0);
    }
  }
  out.append(ptx, last, std::string::npos);
  return out;
}

}  // namespace

TEST_SUITE("inspect::PtxNormalizer") {
  TEST_CASE("inspect::PtxNormalizer: renumbered registers and labels normalize to the same text") {
    const kjit::CompileResult r = kjit::test::compile_for_test("gelu.cu", kjit::test::k_gelu_source);
    const kjit::CompileResult u = kjit::test::compile_for_test("dot.cu", kjit::test::unroll_source(false));
    for (const std::string& ptx : {r.ptx, u.ptx}) {
      const std::string renumbered = renumber(ptx);
      REQUIRE(renumbered != ptx);  // the fixture really changed
      CHECK(ins::normalize(renumbered) == ins::normalize(ptx));
      const ins::DiffResult d = ins::diff(ptx, renumbered);
      CHECK(d.equal());
      for (const ins::FunctionDiff& f : d.functions) CHECK(f.unified.empty());
      // --raw sees the renumbering.
      CHECK(!ins::diff(ptx, renumbered, ins::DiffOptions{.raw = true}).equal());
    }
    CHECK(kjit::test::compile_for_test("dot.cu", kjit::test::unroll_source(false)).ptx.find("$L__BB") !=
          std::string::npos);
  }

  TEST_CASE("inspect::PtxNormalizer: comments, headers, debug info and line info are dropped") {
    const kjit::CompileResult plain = kjit::test::compile_for_test("gelu.cu", kjit::test::k_gelu_source);
    const kjit::CompileResult lineinfo =
        kjit::test::compile_for_test("gelu.cu", kjit::test::k_gelu_source, {"--generate-line-info"});
    REQUIRE(lineinfo.ptx.find(".loc") != std::string::npos);
    const std::string n = ins::normalize(lineinfo.ptx);
    CHECK(n == ins::normalize(plain.ptx));
    CHECK(n.find("//") == std::string::npos);
    CHECK(n.find(".loc") == std::string::npos);
    CHECK(n.find(".file") == std::string::npos);
    CHECK(n.find(".section") == std::string::npos);
    CHECK(n.find("Compiler Build ID") == std::string::npos);
    CHECK(n.find(".target sm_90") != std::string::npos);
    CHECK(n.find("ex2.approx.ftz.f32") != std::string::npos);
  }

  TEST_CASE("inspect::PtxNormalizer: registers are renamed per class in order of first appearance - declarations follow") {
    const char* ptx = R"(.version 9.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 k_param_0)
{
	.reg .pred 	%p<9>;
	.reg .b32 	%r<40>;
	.reg .b64 	%rd<3>;
	mov.u32 	%r31, %tid.x;
	setp.ge.s32 	%p8, %r31, 4;
	@%p8 bra 	$L__BB0_7;
	add.s32 	%r7, %r31, %r31;
$L__BB0_7:
$L__tmp3:
	mov.u64 	%rd2, %clock64;
	ret;
}
)";
    const std::string n = ins::normalize(ptx);
    CHECK(n.find("mov.u32 %r1, %tid.x;") != std::string::npos);
    CHECK(n.find("setp.ge.s32 %p1, %r1, 4;") != std::string::npos);
    CHECK(n.find("@%p1 bra $L1;") != std::string::npos);
    CHECK(n.find("add.s32 %r2, %r1, %r1;") != std::string::npos);
    CHECK(n.find("$L1:") != std::string::npos);
    CHECK(n.find("$L__tmp3") == std::string::npos);  // nothing jumps there
    CHECK(n.find("mov.u64 %rd1, %clock64;") != std::string::npos);
    CHECK(n.find(".reg .b32 %r<3>;") != std::string::npos);
    CHECK(n.find(".reg .pred %p<2>;") != std::string::npos);
    const ins::PtxModule m = ins::normalized(ins::parse_ptx(ptx));
    REQUIRE(m.functions.size() == 1);
    CHECK(m.functions[0].registers[1] == ins::RegisterDecl{".b32", "%r", 3, true});
  }

  TEST_CASE("inspect::PtxNormalizer: normalizing is idempotent") {
    const kjit::CompileResult r = kjit::test::compile_for_test("gelu.cu", kjit::test::k_gelu_source);
    const std::string once = ins::normalize(r.ptx);
    CHECK(ins::normalize(once) == once);
  }
}
