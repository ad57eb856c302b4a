// The live metric session's parts that need no GPU: the message for each CUPTI refusal (the
// status injected as CUPTI would return it) names the cause and the fix, and the launch filter
// picks launches as ncu's -k/-s/-c do.
#include <kjit/error.hpp>

#include "tools/profile/metric_session.hpp"

#include <doctest/doctest.h>

#include <random>
#include <string>

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_SUITE("profile MetricSession") {
  TEST_CASE("a refusal for privileges names the driver setting and the capabilities") {
    for (CUptiResult status : {CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES}) {
      const std::string m = kjit::profile::counters_refused(status, "cuptiRangeProfilerEnable");
      INFO(m);
      CHECK(has(m, "cuptiRangeProfilerEnable"));
      CHECK(has(m, kjit::profile::cupti_result_name(status)));
      CHECK(has(m, "NVreg_RestrictProfilingToAdminUsers=0"));
      CHECK(has(m, "CAP_SYS_ADMIN"));
      CHECK(has(m, "CAP_PERFMON"));
      CHECK(has(m, "timings are recorded"));
    }
    CHECK(kjit::profile::cupti_result_name(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) == "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES");
  }

  TEST_CASE("other refusals name their cause") {
    const std::string other = kjit::profile::counters_refused(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
                                                              "cuptiRangeProfilerStart");
    CHECK(has(other, "another profiler"));
    CHECK(has(other, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"));
    CHECK(has(kjit::profile::counters_refused(CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED, "cuptiRangeProfilerEnable"), "MIG"));
    CHECK(has(kjit::profile::counters_refused(CUPTI_ERROR_NOT_SUPPORTED, "cuptiRangeProfilerEnable"), "offers no counters"));
    const std::string unknown = kjit::profile::counters_refused(CUPTI_ERROR_UNKNOWN, "cuptiRangeProfilerDecodeData",
                                                                "an unknown internal error");
    CHECK(has(unknown, "cuptiRangeProfilerDecodeData: CUPTI_ERROR_UNKNOWN (an unknown internal error)"));
  }

  TEST_CASE("the launch filter skips then counts matching launches") {
    std::mt19937 gen(11);
    const std::uint64_t skip = 1 + gen() % 4, count = 2 + gen() % 4;
    kjit::profile::LaunchFilter f({.kernel = "^soft", .launch_count = count, .launch_skip = skip});
    std::uint64_t picked = 0, softmaxes = 0;
    for (int i = 0; i < 40; ++i) {
      const bool soft = gen() % 2 == 0;
      softmaxes += soft;
      // Matched on the short demangled name ("softmax<float, 256>"), not only the mangled one.
      const bool p = f.pick(soft ? "_Z7softmaxIfLi256EEvPKfPfii" : "_Z6squarePKfPfi");
      if (p) {
        CHECK(soft);
        CHECK(softmaxes > skip);
        ++picked;
      }
    }
    CHECK(picked == std::min<std::uint64_t>(count, softmaxes > skip ? softmaxes - skip : 0));
    CHECK_FALSE(f.pick(nullptr));  // a graph launch: no single kernel

    kjit::profile::LaunchFilter all({});
    for (int i = 0; i < 5; ++i) CHECK(all.pick("anything"));
    kjit::profile::LaunchFilter mangled({.kernel = "PKfPf"});
    CHECK(mangled.pick("_Z6squarePKfPfi"));
    CHECK_THROWS_AS(kjit::profile::LaunchFilter({.kernel = "(unclosed"}), kjit::UsageError);
  }
}
