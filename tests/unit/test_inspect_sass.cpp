#include "test_inspect_kernels.hpp"

#include <kjit/tools/inspect.hpp>

#include <doctest/doctest.h>

#include <set>
#include <string>

namespace ins = kjit::inspect;

TEST_SUITE("inspect::Sass") {
  TEST_CASE("inspect::Sass: SASS of a real cubin, or a plain error naming the missing tools") {
    const kjit::CompileResult r = kjit::test::compile_for_test("gelu.cu", kjit::test::k_gelu_source);
    if (ins::find_disassembler()) {
      CHECK(ins::disassembler_unavailable_reason().empty());
      const std::string all = ins::sass(r);
      CHECK(all.find("gelu") != std::string::npos);
      CHECK(all.find("softplus") != std::string::npos);
      const std::string one = ins::sass(r, "softplus");
      CHECK(one.find("softplus") != std::string::npos);
      CHECK(one.find("EXIT") != std::string::npos);
      CHECK(one.find(".text.gelu") == std::string::npos);
      CHECK_THROWS_AS(ins::sass(r, "nope"), kjit::UsageError);
    } else {
      const std::string reason = ins::disassembler_unavailable_reason();
      CHECK(reason.find("nvdisasm") != std::string::npos);
      CHECK(reason.find("cuobjdump") != std::string::npos);
      // Each folder searched is named once.
      const std::size_t open = reason.find("(searched "), close = reason.find(')', open);
      REQUIRE(open != std::string::npos);
      std::set<std::string> seen;
      std::string list = reason.substr(open + 10, close - open - 10);
      for (std::size_t pos = 0; pos <= list.size();) {
        std::size_t comma = list.find(", ", pos);
        if (comma == std::string::npos) comma = list.size();
        const std::string dir = list.substr(pos, comma - pos);
        CHECK_MESSAGE(seen.insert(dir).second, dir, " is listed twice in: ", reason);
        pos = comma + 2;
      }
      try {
        (void)ins::sass(r);
        FAIL("sass() did not throw without a disassembler");
      } catch (const kjit::UnavailableError& e) {  // the command could not run here: not the input's fault
        CHECK(std::string(e.what()).find("nvdisasm") != std::string::npos);
      }
    }
  }

  TEST_CASE("inspect::Sass: no cubin: a UsageError that says why") {
    kjit::CompileResult ptx_only;
    ptx_only.program_name = "k.cu";
    ptx_only.arch = kjit::Arch::compute(90);
    CHECK_THROWS_AS(ins::sass(ptx_only), kjit::UsageError);
    CHECK_THROWS_AS(ins::sass(std::string_view{}), kjit::UsageError);
  }
}
