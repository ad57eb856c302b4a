// kjit::quantile and kjit::bench's option checks (CPU: the checks come before any driver call).
#include <kjit/bench.hpp>
#include <kjit/error.hpp>

#include <doctest/doctest.h>

#include <cmath>

TEST_SUITE("bench") {
  TEST_CASE("quantile: interpolates linearly like numpy") {
    std::vector<double> v = {4, 1, 3, 2};
    CHECK(kjit::quantile(v, 0.0) == 1.0);
    CHECK(kjit::quantile(v, 1.0) == 4.0);
    CHECK(kjit::quantile(v, 0.5) == doctest::Approx(2.5));
    CHECK(kjit::quantile(v, 0.2) == doctest::Approx(1.6));
    CHECK(kjit::quantile({7.0}, 0.8) == 7.0);
    CHECK(std::isnan(kjit::quantile({}, 0.5)));
  }

  TEST_CASE("bench: rejects options that make no sense before touching the driver") {
    auto nothing = [](CUstream_st*) {};
    kjit::BenchOptions o;
    o.repeat_ms = 0;
    CHECK_THROWS_WITH_AS(kjit::bench(nothing, o), doctest::Contains("repeat_ms is 0"), kjit::UsageError);
    o = {};
    o.quantiles = {0.5, 1.5};
    CHECK_THROWS_WITH_AS(kjit::bench(nothing, o), doctest::Contains("quantile 1.5 is outside [0, 1]"), kjit::UsageError);
    o = {};
    o.min_repetitions = 10;
    o.max_repetitions = 5;
    CHECK_THROWS_WITH_AS(kjit::bench(nothing, o), doctest::Contains("1 <= min <= max"), kjit::UsageError);
  }
}
