// request::ModuleRegistry without a GPU (its loader replaced by one that counts): a load is one
// get_or_load; a request's first one obtains its result and loads it once, its repeats are
// registry hits that obtain nothing; two requests of one key load once (a second device, which
// shares the load, is tests/gpu's); threads asking for one request at once obtain and load it once (the
// others wait, counted as waits), an error reaches every waiter and the next call tries again;
// a result compiled elsewhere is found by its key.
#include <kjit/error.hpp>

#include "core/request/module_registry.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using kjit::Outcome;
using kjit::request::ModuleRegistry;
using kjit::request::RequestHash;

struct Loads {
  std::atomic<int> fresh{0}, shared{0};
  ModuleRegistry::Loader loader() {
    return [this](kjit::CompileResult, const kjit::Device&, const kjit::Module* elsewhere) {
      ++(elsewhere != nullptr ? shared : fresh);
      return kjit::Module();
    };
  }
};

kjit::CompileResult result(const std::string& key, Outcome outcome) {
  kjit::CompileResult r;
  r.key = key;
  r.outcome = outcome;
  return r;
}

RequestHash random_request(std::mt19937_64& rng) { return {rng(), rng()}; }

}  // namespace

TEST_SUITE("ModuleRegistry") {
  TEST_CASE("a request's first load obtains and loads once and its repeats are registry hits that obtain nothing") {
    std::mt19937_64 rng(71);
    kjit::request::Counters counters;
    Loads loads;
    ModuleRegistry registry(counters, loads.loader());
    const RequestHash request = random_request(rng);
    const kjit::Device device;
    int obtained = 0;
    const auto obtain = [&] {
      ++obtained;
      return result("k1", Outcome::compiled);
    };
    CHECK(registry.get_or_load(request, device, obtain).outcome == Outcome::compiled);
    for (int i = 0; i < 5; ++i) CHECK(registry.get_or_load(request, device, obtain).outcome == Outcome::registry);
    CHECK(obtained == 1);
    CHECK(loads.fresh == 1);
    CHECK(counters.registry_hits == 5);
    CHECK(counters.cache.waits.load() == 0);
  }

  TEST_CASE("two requests of one key load once per device and the second answers as its result came") {
    std::mt19937_64 rng(73);
    kjit::request::Counters counters;
    Loads loads;
    ModuleRegistry registry(counters, loads.loader());
    const kjit::Device device;
    CHECK(registry.get_or_load(random_request(rng), device, [] { return result("k", Outcome::compiled); }).outcome ==
          Outcome::compiled);
    // k.cu and ./k.cu: another request, one key.
    CHECK(registry.get_or_load(random_request(rng), device, [] { return result("k", Outcome::hit); }).outcome ==
          Outcome::hit);
    CHECK(loads.fresh == 1);
    CHECK(loads.shared == 0);
    CHECK(counters.registry_hits == 0);
    // Another key loads.
    registry.get_or_load(random_request(rng), device, [] { return result("other", Outcome::hit); });
    CHECK(loads.fresh == 2);
  }

  TEST_CASE("threads asking for one request at once obtain and load it once and the others wait for it") {
    std::mt19937_64 rng(79);
    kjit::request::Counters counters;
    Loads loads;
    ModuleRegistry registry(counters, loads.loader());
    const RequestHash request = random_request(rng);
    std::atomic<int> obtained{0}, compiled{0}, waited{0}, other{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&] {
        const auto a = registry.get_or_load(request, kjit::Device(), [&] {
          ++obtained;
          std::this_thread::sleep_for(std::chrono::milliseconds(300));  // everyone else arrives meanwhile
          return result("slow", Outcome::compiled);
        });
        ++(a.outcome == Outcome::compiled ? compiled : a.outcome == Outcome::waited ? waited : other);
      });
    }
    for (auto& t : threads) t.join();
    CHECK(obtained == 1);
    CHECK(loads.fresh == 1);
    CHECK(compiled == 1);
    CHECK(waited + other == 7);
    CHECK(counters.cache.waits.load() == static_cast<std::uint64_t>(waited.load()));
    CHECK(counters.registry_hits == static_cast<std::uint64_t>(other.load()));  // a late thread: a plain hit
  }

  TEST_CASE("an obtain that throws reaches every thread waiting for it and the next call tries again") {
    std::mt19937_64 rng(83);
    kjit::request::Counters counters;
    Loads loads;
    ModuleRegistry registry(counters, loads.loader());
    const RequestHash request = random_request(rng);
    std::atomic<int> obtained{0}, thrown{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        try {
          registry.get_or_load(request, kjit::Device(), [&]() -> kjit::CompileResult {
            ++obtained;
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            throw kjit::UsageError("refused on purpose");
          });
        } catch (const kjit::UsageError& e) {
          if (std::string(e.what()) == "refused on purpose") ++thrown;
        }
      });
    }
    for (auto& t : threads) t.join();
    CHECK(thrown == 4);
    CHECK(obtained <= 4);  // a thread that came after the failure tried again itself
    const int before = obtained;
    CHECK(registry.get_or_load(request, kjit::Device(), [&] {
      ++obtained;
      return result("now", Outcome::compiled);
    }).outcome == Outcome::compiled);
    CHECK(obtained == before + 1);
    CHECK(loads.fresh == 1);
  }

  TEST_CASE("a result compiled elsewhere is found by its key or loaded") {
    std::mt19937_64 rng(89);
    kjit::request::Counters counters;
    Loads loads;
    ModuleRegistry registry(counters, loads.loader());
    CHECK(registry.get_or_load(result("e", Outcome::compiled), kjit::Device()).outcome == Outcome::compiled);
    CHECK(registry.get_or_load(result("e", Outcome::compiled), kjit::Device()).outcome == Outcome::registry);
    CHECK(counters.registry_hits == 1);
    CHECK(loads.fresh == 1);
    // A request whose result has that key loads nothing more.
    CHECK(registry.get_or_load(random_request(rng), kjit::Device(), [] { return result("e", Outcome::hit); })
              .outcome == Outcome::hit);
    CHECK(loads.fresh == 1);
  }
}
