#include "core/system/result.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <utility>
#include <variant>

using kjit::system::Failure;
using kjit::system::Result;

namespace {

Result<int> half(int n) {
  if (n % 2 != 0) return Failure{"halving " + std::to_string(n) + ": odd"};
  return n / 2;
}

// Passes a helper's Failure on unchanged, as the cache's callers do.
Result<void> check_even(int n) {
  auto h = half(n);
  if (!h) return h.error();
  return {};
}

}  // namespace

TEST_SUITE("Result") {
  TEST_CASE("a value converts to true and dereferences") {
    Result<std::string> r = std::string("abc");
    REQUIRE(r);
    CHECK(r.has_value());
    CHECK(*r == "abc");
    CHECK(r->size() == 3);
    CHECK(r.value() == "abc");
    r->append("d");
    CHECK(*r == "abcd");
    const Result<std::string>& c = r;
    CHECK(*c == "abcd");
    CHECK(c->size() == 4);
    CHECK(half(8));
    CHECK(*half(8) == 4);
  }

  TEST_CASE("a Failure converts to false and keeps its message and reason") {
    const Result<int> r = half(3);
    REQUIRE_FALSE(r);
    CHECK_FALSE(r.has_value());
    CHECK(r.error().message == "halving 3: odd");
    CHECK(r.error().reason == Failure::Reason::error);
    CHECK_FALSE(r.error().timed_out());

    const Result<int> t = Failure{"waiting for lock /x: still held", Failure::Reason::timed_out};
    REQUIRE_FALSE(t);
    CHECK(t.error().timed_out());
    CHECK(t.error().message == "waiting for lock /x: still held");
  }

  TEST_CASE("Result<void>: success by default, or a Failure passed on from another Result") {
    const Result<void> ok;
    CHECK(ok);
    CHECK(ok.has_value());
    CHECK(check_even(4));
    const Result<void> odd = check_even(5);
    REQUIRE_FALSE(odd);
    CHECK(odd.error().message == "halving 5: odd");
    const Result<void> timed_out = Failure{"t", Failure::Reason::timed_out};
    REQUIRE_FALSE(timed_out);
    CHECK(timed_out.error().timed_out());
  }

  TEST_CASE("a move-only value moves in and out, and assignment replaces the state") {
    Result<std::unique_ptr<int>> r = std::make_unique<int>(7);
    REQUIRE(r);
    CHECK(**r == 7);
    std::unique_ptr<int> taken = std::move(*r);
    REQUIRE(taken);
    CHECK(*taken == 7);
    CHECK_FALSE(*r);  // moved from, still a value
    r = Failure{"gone"};
    REQUIRE_FALSE(r);
    CHECK(r.error().message == "gone");
    r = std::make_unique<int>(8);
    REQUIRE(r);
    CHECK(*std::move(r).value() == 8);
  }

  TEST_CASE("asking a Failure for its value, or a success for its error, is a bug that throws") {
    Result<int> failed = half(1);
    CHECK_THROWS_AS(failed.value(), std::bad_variant_access);
    CHECK_THROWS_AS(*failed, std::bad_variant_access);
    const Result<int> value = half(2);
    CHECK_THROWS_AS(value.error(), std::bad_variant_access);
    const Result<void> ok;
    CHECK_THROWS_AS(ok.error(), std::bad_optional_access);
  }
}
