// A fixture of tests/check_test_reports.py (ctest build/test_report_check_refuses_its_fixture), never
// compiled: each line that ends in "// refused" must be refused, and no other.
#include "support/skip.hpp"

#include <doctest/doctest.h>

#define MY_SKIP(why) do { std::printf("[kjit-skip] %s\n", why); return; } while (0)  // refused

namespace {
// A helper's return is its own business.
bool helper(int x) {
  if (x > 0) return true;
  return false;
}
}  // namespace

TEST_CASE("a one-line early return") {
  if (helper(1)) return;  // refused
}

TEST_CASE("a braced early return over several lines") {
  if (helper(2)) {
    MESSAGE("nothing to do here");
    return;  // refused
  }
  CHECK(true);
}

TEST_CASE("a return in a loop, in a try and in a subcase") {
  for (int i = 0; i < 3; ++i) {
    try {
      if (i == 2)
        return  // refused
            ;
    } catch (...) {
    }
  }
  SUBCASE("inner") {
    while (true) { return; }  // refused
  }
}

TEST_CASE("a skip by hand") {
  std::printf("[kjit-skip] no device\n");  // refused
  std::printf(R"([kjit-skip] no )" "device\n");  // refused
}

TEST_CASE_FIXTURE(Fixture, "a fixture's case") {
  do {
    return;  // refused
  } while (false);
}

TEST_CASE("what may return: a skip, lambdas, local classes, and text that only looks like a return") {
  if (!helper(3)) KJIT_SKIP("helper says no");
  auto f = [](int x) {
    if (x) return 1;
    return 2;
  };
  auto g = [&]() mutable noexcept -> int { return f(1); };
  std::thread([] { return; }).join();
  struct Local {
    int value() const { return 4; }
  };
  const char* text = "if (x) { return; } }";  // a brace and a return in a string
  const char* raw = R"x(TEST_CASE("no") { return; } )" )x";
  char brace = '}';
  // return; in a comment
  /* { return; } */
  CHECK(g() + Local{}.value() + text[0] + raw[0] + brace > 0);
}
