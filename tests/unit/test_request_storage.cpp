// request::Storage: the cache tiers behind one front. A lookup's answer carries why each tier
// missed (no state kept between calls or threads), a fill publishes the entry on the disk before it
// returns, always_compile asks no tier, and entries of kjit's own go through the same tiers. An
// unlocked fill (a link's) waits for no lock another holder keeps, is this process's hit at once and
// the disk's once the worker wrote it.
#include <kjit/kjit.hpp>

#include "core/cache/store.hpp"
#include "core/compile/options/option_marshalling.hpp"
#include "core/request/storage.hpp"
#include "support/helpers.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <random>
#include <string>
#include <thread>

namespace {

using kjit::request::PreparedRequest;
using kjit::request::Storage;

const kjit::Arch k_arch = kjit::Arch::sm(90);

kjit::Program program(unsigned seed) {
  std::mt19937 rng(seed);
  return kjit::Program("s" + std::to_string(seed) + ".cu",
                       "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] *= " + std::to_string(rng() % 1000 + 2) +
                           ".5f; }\n");
}

// A made-up compile result: what the storage keeps is what fill() was given.
Storage::Make maker(int& calls, const std::string& ptx) {
  return [&calls, ptx](bool&) {
    ++calls;
    kjit::CompileResult r;
    r.arch = k_arch;
    r.ptx = ptx;
    r.log = "made";
    return r;
  };
}

// The worker finished before the storage its jobs use goes (declared after it).
struct Finish {
  kjit::system::Background& background;
  ~Finish() { background.finish(background.limits().exit_bound); }
};

std::string why(const Storage::Found& f, const std::string& tier) {
  for (const auto& t : f.missed) {
    if (t.name == tier) return t.why;
  }
  return "<not asked>";
}

}  // namespace

TEST_SUITE("Storage") {
  TEST_CASE("Storage: a miss says why each tier missed in its answer and a fill is the next lookup's hit") {
    kjit::test::TempDir dir;
    kjit::RuntimeConfig config = kjit::test::quiet_config(dir.path() / "cache");
    config.require_hit = true;  // the misses are noted
    kjit::request::Counters counters;
    kjit::system::Background background;
    Storage storage(config, counters, [](kjit::LogLevel, std::string_view) {}, background);
    Finish finish{background};
    const kjit::Program p = program(7);
    const PreparedRequest request = PreparedRequest::make(p, kjit::compile::normalize({.arch = k_arch}), k_arch, kjit::compile::FastPath::on);

    Storage::Found miss = storage.find(p, k_arch, request);
    CHECK_FALSE(miss.result);
    CHECK(why(miss, "disk").find("absent from ") == 0);
    CHECK(why(miss, "remote").find("none configured") == 0);

    // Another thread's lookup answers for itself: nothing of this thread's miss reaches it.
    const kjit::Program other = program(8);
    Storage::Found other_miss;
    std::thread([&] {
      other_miss = storage.find(other, k_arch, PreparedRequest::make(other, kjit::compile::normalize({.arch = k_arch}), k_arch, kjit::compile::FastPath::on));
    }).join();
    CHECK(other_miss.missed.size() == 2);

    int calls = 0;
    const std::string ptx = "// ptx " + std::to_string(std::random_device{}());
    kjit::CompileResult made = storage.fill(p, k_arch, request, maker(calls, ptx));
    CHECK(calls == 1);
    CHECK(made.outcome == kjit::Outcome::compiled);
    CHECK(made.key == request.key.key.hex());
    Storage::Found hit = storage.find(p, k_arch, request);  // published before fill() returned
    REQUIRE(hit.result);
    CHECK(hit.result->outcome == kjit::Outcome::hit);
    CHECK(hit.result->ptx == ptx);
    CHECK(hit.missed.empty());
    const auto c = counters.cache.snapshot();
    CHECK(c.misses == 1);
    CHECK(c.compiles == 1);
    CHECK(c.hits == 1);
  }

  TEST_CASE("Storage: an unlocked fill takes no key lock, is found at once and is on the disk after the worker") {
    kjit::test::TempDir dir;
    kjit::RuntimeConfig config = kjit::test::quiet_config(dir.path() / "cache");
    config.lock_timeout = std::chrono::hours(1);  // a fill that waited for the lock below would hang: the bound fails it
    config.lock_stale_after = std::chrono::hours(1);
    kjit::request::Counters counters;
    kjit::system::Background background;
    Storage storage(config, counters, [](kjit::LogLevel, std::string_view) {}, background);
    std::mt19937 random(std::random_device{}());
    const kjit::Program p = program(random());
    const PreparedRequest request = PreparedRequest::make(p, kjit::compile::normalize({.arch = k_arch}), k_arch, kjit::compile::FastPath::on);
    REQUIRE_FALSE(storage.find(p, k_arch, request).result);
    // Another holder of the key's lock (as a process compiling it would hold it), kept throughout.
    kjit::cache::Store holder({(dir.path() / "cache").string()});  // the same folder, as another process opens it
    auto held = holder.lock(request.key.key, std::chrono::seconds(5), {}, std::chrono::seconds(5), std::chrono::seconds(10));
    REQUIRE(held);
    int calls = 0;
    const std::string ptx = "// ptx " + std::to_string(random());
    std::promise<kjit::CompileResult> made;
    std::thread filler([&] { made.set_value(storage.fill(p, k_arch, request, maker(calls, ptx), Storage::Fill::unlocked)); });
    auto future = made.get_future();
    const bool done = future.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
    if (!done) held->release();  // let it go, so that the thread ends; the check below fails the case
    filler.join();
    REQUIRE(done);
    const kjit::CompileResult r = future.get();
    CHECK(calls == 1);
    CHECK(r.outcome == kjit::Outcome::compiled);
    CHECK(r.ptx == ptx);
    // This process finds it at once, whether or not the worker wrote it yet.
    Storage::Found hit = storage.find(p, k_arch, request);
    REQUIRE(hit.result);
    CHECK(hit.result->outcome == kjit::Outcome::hit);
    CHECK(hit.result->ptx == ptx);
    // Once the worker finished, a fresh storage (another process's) reads it from the disk.
    held->release();
    background.finish(background.limits().exit_bound);
    kjit::system::Background other_background;
    Storage other(config, counters, [](kjit::LogLevel, std::string_view) {}, other_background);
    Finish finish_other{other_background};
    Storage::Found disk = other.find(p, k_arch, request);
    REQUIRE(disk.result);
    CHECK(disk.result->ptx == ptx);
    CHECK(disk.result->log == "made");
  }

  TEST_CASE("Storage: always_compile asks no tier and notes no miss and entries of kjit's own round-trip") {
    kjit::test::TempDir dir;
    kjit::RuntimeConfig config = kjit::test::quiet_config(dir.path() / "cache");
    kjit::request::Counters counters;
    kjit::system::Background background;
    Storage storage(config, counters, [](kjit::LogLevel, std::string_view) {}, background);
    Finish finish{background};
    const kjit::Program p = program(11);
    const PreparedRequest request = PreparedRequest::make(p, kjit::compile::normalize({.arch = k_arch}), k_arch, kjit::compile::FastPath::on);
    int calls = 0;
    storage.fill(p, k_arch, request, maker(calls, "// a"));
    REQUIRE(storage.find(p, k_arch, request).result);
    CHECK(storage.find(p, k_arch, request).missed.empty());  // require_hit off: no reasons built

    kjit::RuntimeConfig always = config;
    always.always_compile = true;
    Storage compiling(always, counters, [](kjit::LogLevel, std::string_view) {}, background);
    Finish finish_compiling{background};
    CHECK_FALSE(compiling.find(p, k_arch, request).result);

    // An entry that is no compile result (a tuner's decision): the same disk.
    const kjit::cache::Key key = request.key.key;
    CHECK_FALSE(storage.find_entry(kjit::cache::Key{}));
    const auto entry = storage.find_entry(key);
    REQUIRE(entry);
    CHECK(entry->size() > 4);
  }
}
