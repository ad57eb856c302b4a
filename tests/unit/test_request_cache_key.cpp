// The key matrix: every real input changes the key; nothing else does.
#include <kjit/tools.hpp>

#include "core/request/cache_key.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdlib>
#include <set>

namespace {

const char* k_src = R"(
#include "common.cuh"
extern "C" __global__ void k(float* x) { x[threadIdx.x] = twice(x[threadIdx.x]); }
)";

std::string key_of(kjit::Runtime& rt, const kjit::Program& p, const kjit::CompileOptions& o) {
  return rt.explain(p, o).key;
}

kjit::RuntimeConfig config(const std::filesystem::path& cache) {
  kjit::RuntimeConfig c;
  c.cache_dir = cache;
  return c;
}

}  // namespace

TEST_SUITE("CacheKey") {
  TEST_CASE("each real input changes the key and the cache path and spelling and unrelated env do not") {
    kjit::test::TempDir dir;
    auto inc = dir.path() / "inc";
    std::filesystem::create_directories(inc);
    kjit::test::write_file(inc / "common.cuh", "__device__ float twice(float v) { return 2 * v; }\n");
    kjit::Runtime rt(config(dir.path() / "c1"));
    kjit::Program base("k.cu", k_src);
    kjit::CompileOptions o{.arch = kjit::Arch::sm(90), .include_dirs = {inc}};
    const std::string k0 = key_of(rt, base, o);

    SUBCASE("inputs that change the key") {
      std::vector<std::string> keys;
      keys.push_back(key_of(rt, kjit::Program("k2.cu", k_src), o));                                // name
      keys.push_back(key_of(rt, kjit::Program("k.cu", std::string(k_src) + " "), o));             // source
      keys.push_back(key_of(rt, kjit::Program("k.cu", k_src).header("extra.h", "int a;"), o));    // header
      keys.push_back(key_of(rt, kjit::Program("k.cu", k_src).instantiate("f<int>"), o));          // name expr
      keys.push_back(key_of(rt, base, o.with_arch(kjit::Arch::sm(80))));                          // arch
      keys.push_back(key_of(rt, base, o.with_arch(kjit::Arch::compute(90))));                     // output kind
      keys.push_back(key_of(rt, base, o.with_flags({"--use_fast_math"})));                        // option
      keys.push_back(key_of(rt, base, o.with_flags({"-DN=1"})));
      keys.push_back(key_of(rt, base, o.with_flags({"-DN=2"})));
      auto o2 = o;
      o2.std = "c++20";
      keys.push_back(key_of(rt, base, o2));
      std::set<std::string> distinct(keys.begin(), keys.end());
      distinct.insert(k0);
      CHECK(distinct.size() == keys.size() + 1);
    }

    SUBCASE("an included header's content changed with the same size and mtime") {
      struct stat before {};
      REQUIRE(stat((inc / "common.cuh").c_str(), &before) == 0);
      kjit::test::write_file(inc / "common.cuh", "__device__ float twice(float v) { return 3 * v; }\n");
      struct timespec times[2] = {before.st_atim, before.st_mtim};
      REQUIRE(utimensat(AT_FDCWD, (inc / "common.cuh").c_str(), times, 0) == 0);
      struct stat after {};
      REQUIRE(stat((inc / "common.cuh").c_str(), &after) == 0);
      CHECK(after.st_size == before.st_size);
      CHECK(after.st_mtim.tv_sec == before.st_mtim.tv_sec);
      CHECK(key_of(rt, base, o) != k0);
    }

    SUBCASE("a header reached through another header counts too") {
      kjit::test::write_file(inc / "common.cuh", "#include \"deep.cuh\"\n__device__ float twice(float v) { return 2 * v; }\n");
      kjit::test::write_file(inc / "deep.cuh", "// one\n");
      std::string a = key_of(rt, base, o);
      kjit::test::write_file(inc / "deep.cuh", "// two\n");
      CHECK(key_of(rt, base, o) != a);
    }

    SUBCASE("things that must not change the key") {
      kjit::Runtime other(config(dir.path() / "elsewhere"));
      CHECK(key_of(other, base, o) == k0);  // cache path
      kjit::CompileOptions spelled{.flags = {"-arch=sm_90", "-I", inc.string(), "-O3"}};
      CHECK(key_of(rt, base, spelled) == k0);  // spelling that marshals identically
      setenv("KJIT_UNRELATED_TEST_VARIABLE", "1", 1);
      setenv("PATH", (std::string(std::getenv("PATH")) + ":/nonexistent").c_str(), 1);
      CHECK(key_of(rt, base, o) == k0);  // unrelated environment
      unsetenv("KJIT_UNRELATED_TEST_VARIABLE");
      // Timestamps: touching the header changes nothing.
      std::filesystem::last_write_time(inc / "common.cuh", std::filesystem::file_time_type::clock::now());
      CHECK(key_of(rt, base, o) == k0);
    }

    SUBCASE("typed delimiters: moving bytes between fields changes the key") {
      CHECK(key_of(rt, kjit::Program("k.cu", k_src).header("ab", "c"), o) !=
            key_of(rt, kjit::Program("k.cu", k_src).header("a", "bc"), o));
    }
  }

  TEST_CASE("explain lists every field that goes into the key") {
    kjit::test::TempDir dir;
    kjit::Runtime rt(config(dir.path()));
    auto e = rt.explain(kjit::Program("k.cu", "__global__ void k() {}").header("h.cuh", "int x;"),
                        {.arch = kjit::Arch::sm(90), .fast_math = true});
    std::string text;
    for (const auto& [label, value] : e.fields) text += label + ": " + value + "\n";
    for (const char* label : {"kjit-version", "nvrtc-version", "target", "option", "program-name", "source",
                              "header-name", "header-content", "name-expression-count"}) {
      CHECK_MESSAGE(text.find(label) != std::string::npos, label);
    }
    CHECK(e.key.size() == 32);
    CHECK(text.find("--use_fast_math") != std::string::npos);
    CHECK(text.find(dir.path().string()) == std::string::npos);  // the cache path is not an input
  }
}
