// KernelSignature on PTX that NVRTC made for sm_90 (no GPU needed): the parameter table from the
// PTX and the mangled name, struct sizes and alignment, plain-name lookup, and the packers'
// checks with random values against memcpy of the C++ type.
#include <kjit/kjit.hpp>
#include <kjit/parameters.hpp>

#include "support/helpers.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

const char* k_source = R"(
struct Pair { float a; int b; double c; };
__global__ void mixed(const float* in, unsigned short u16, long long i64, double f64, Pair p, bool flag) {}
extern "C" __global__ void plain(float* p, unsigned n) {}
template <class T> __global__ void scale(T* x, T a, int n) {}
__global__ void twice(int) {}
__global__ void twice(float) {}
)";

kjit::CompileResult compiled(const kjit::test::TempDir& dir) {
  kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
  return rt.compile(kjit::Program("sig.cu", k_source).instantiate("scale<double>"), {.arch = kjit::Arch::sm(90)});
}

}  // namespace

TEST_SUITE("KernelSignature") {
  TEST_CASE("reads kinds, sizes and alignment from the PTX and the mangled name") {
    kjit::test::TempDir dir;
    auto r = compiled(dir);
    auto s = kjit::KernelSignature::of(r, "mixed");
    REQUIRE(s.size() == 6);
    CHECK(s.symbol().rfind("_Z5mixed", 0) == 0);
    const auto& p = s.parameters();
    CHECK(p[0].kind == kjit::ParameterKind::pointer);
    CHECK(p[0].type == "float const*");
    CHECK(p[1].kind == kjit::ParameterKind::unsigned_integer);
    CHECK(p[1].size == 2);
    CHECK(p[2].kind == kjit::ParameterKind::signed_integer);
    CHECK(p[3].kind == kjit::ParameterKind::floating);
    CHECK(p[4].kind == kjit::ParameterKind::bytes);
    CHECK(p[4].size == 16);
    CHECK(p[4].align == 8);
    CHECK(p[5].kind == kjit::ParameterKind::boolean);
    CHECK(s.offset(4) % 8 == 0);
    CHECK(s.buffer_bytes() == s.offset(5) + 1);
    auto t = kjit::KernelSignature::of(r, "scale<double>");
    CHECK(t.to_string() == "scale<double>(double* [.u64], double [.f64], int [.u32])");
    auto c = kjit::KernelSignature::of(r, "plain");
    CHECK(c.parameters()[0].kind == kjit::ParameterKind::pointer_or_integer);
    CHECK(c.parameters()[1].kind == kjit::ParameterKind::integer);
  }

  TEST_CASE("names the parameters from the source and says which pointers are const") {
    kjit::test::TempDir dir;
    auto r = compiled(dir);
    auto s = kjit::KernelSignature::of(r, "mixed");
    CHECK(s.parameters()[0].read_only);  // const float* in
    for (std::size_t i = 1; i < s.size(); ++i) CHECK_FALSE(s.parameters()[i].read_only);
    CHECK(s.parameters()[0].source_name.empty());
    REQUIRE(s.name_parameters(k_source));
    std::vector<std::string> names;
    for (const auto& q : s.parameters()) names.push_back(q.source_name);
    CHECK(names == std::vector<std::string>{"in", "u16", "i64", "f64", "p", "flag"});
    auto scale = kjit::KernelSignature::of(r, "scale<double>");  // a template: its plain name
    REQUIRE(scale.name_parameters(k_source));
    CHECK(scale.parameters()[0].source_name == "x");
    CHECK_FALSE(scale.parameters()[0].read_only);
    auto plain = kjit::KernelSignature::of(r, "plain");  // extern "C": no const in the PTX
    CHECK_FALSE(plain.parameters()[0].read_only);
    // Another arity, another name, no __global__, a comment: nothing named.
    auto other = kjit::KernelSignature::of(r, "mixed");
    CHECK_FALSE(other.name_parameters("__global__ void mixed(int only) {}"));
    CHECK_FALSE(other.name_parameters("void mixed(const float* a, unsigned short b, long long c, double d, Pair e, bool f);"));
    CHECK_FALSE(other.name_parameters("// __global__ void mixed(const float* a, unsigned short b, long long c, double d, Pair e, bool f) {}"));
    CHECK(other.parameters()[0].source_name.empty());
  }

  TEST_CASE("packs random values exactly as the C++ types lay them out") {
    kjit::test::TempDir dir;
    auto r = compiled(dir);
    auto s = kjit::KernelSignature::of(r, "mixed");
    std::mt19937_64 rng(20261125);
    std::vector<unsigned char> buffer(s.buffer_bytes(), 0xAB);
    for (int round = 0; round < 100; ++round) {
      auto u16 = static_cast<unsigned short>(rng());
      auto i64 = static_cast<long long>(rng());
      double f64 = std::uniform_real_distribution<double>(-1e300, 1e300)(rng);
      unsigned char pair[16];
      for (auto& b : pair) b = static_cast<unsigned char>(rng());
      std::uint64_t address = rng() | 1;
      s.pack_pointer(0, address, buffer.data() + s.offset(0));
      s.pack_signed(1, u16, buffer.data() + s.offset(1));
      s.pack_signed(2, i64, buffer.data() + s.offset(2));
      s.pack_floating(3, f64, buffer.data() + s.offset(3));
      s.pack_bytes(4, pair, sizeof pair, buffer.data() + s.offset(4));
      s.pack_boolean(5, round % 2 == 0, buffer.data() + s.offset(5));
      CHECK(std::memcmp(buffer.data() + s.offset(0), &address, 8) == 0);
      CHECK(std::memcmp(buffer.data() + s.offset(1), &u16, 2) == 0);
      CHECK(std::memcmp(buffer.data() + s.offset(2), &i64, 8) == 0);
      CHECK(std::memcmp(buffer.data() + s.offset(3), &f64, 8) == 0);
      CHECK(std::memcmp(buffer.data() + s.offset(4), pair, 16) == 0);
      CHECK(buffer[s.offset(5)] == (round % 2 == 0 ? 1 : 0));
    }
  }

  TEST_CASE("refuses what does not fit, naming the parameter and the list") {
    kjit::test::TempDir dir;
    auto r = compiled(dir);
    auto s = kjit::KernelSignature::of(r, "mixed");
    unsigned char slot[16];
    CHECK_THROWS_WITH_AS(s.pack_signed(1, 65536, slot),
                         doctest::Contains("argument 1 does not fit parameter #1 unsigned short"), kjit::ArgumentError);
    CHECK_THROWS_WITH_AS(s.pack_signed(1, -1, slot), doctest::Contains("negative"), kjit::ArgumentError);
    CHECK_THROWS_WITH_AS(s.pack_floating(2, 1.5, slot), doctest::Contains("a float for a signed integer"),
                         kjit::ArgumentError);
    CHECK_THROWS_WITH_AS(s.pack_signed(0, 5, slot), doctest::Contains("a pointer parameter takes a device array"),
                         kjit::ArgumentError);
    CHECK_THROWS_WITH_AS(s.pack_pointer(3, 0x1000, slot), doctest::Contains("takes a scalar"), kjit::ArgumentError);
    CHECK_THROWS_WITH_AS(s.pack_bytes(4, slot, 12, slot), doctest::Contains("the parameter has 16 bytes"),
                         kjit::ArgumentError);
    CHECK_THROWS_WITH_AS(s.check_count(5), doctest::Contains("given 5 arguments, the kernel takes 6: mixed("),
                         kjit::ArgumentError);
    CHECK_THROWS_WITH_AS(kjit::KernelSignature::of(r, "twice"), doctest::Contains("overloaded"), kjit::UsageError);
    CHECK_THROWS_WITH_AS(kjit::KernelSignature::of(r, "missing"), doctest::Contains("no such kernel"),
                         kjit::UsageError);
  }
}
