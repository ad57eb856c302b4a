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
    // extern "C": the PTX alone says a 64-bit value and a 32-bit integer; NVRTC's type query says more.
    const kjit::KernelSignature bare(r.ptx, "plain", "plain");
    CHECK(bare.parameters()[0].kind == kjit::ParameterKind::pointer_or_integer);
    CHECK(bare.parameters()[1].kind == kjit::ParameterKind::integer);
    auto c = kjit::KernelSignature::of(r, "plain");
    CHECK(c.parameters()[0].kind == kjit::ParameterKind::pointer);
    CHECK(c.parameters()[0].type == "float*");
    CHECK(c.parameters()[1].kind == kjit::ParameterKind::unsigned_integer);
  }

  TEST_CASE("names the parameters from the source and says which pointers are const") {
    kjit::test::TempDir dir;
    auto r = compiled(dir);
    auto s = kjit::KernelSignature::of(r, "mixed");
    CHECK(s.parameters()[0].read_only);  // const float* in
    for (std::size_t i = 1; i < s.size(); ++i) CHECK_FALSE(s.parameters()[i].read_only);
    CHECK(s.parameters()[0].source_name.empty());
    REQUIRE(s.read_declaration(k_source));
    std::vector<std::string> names;
    for (const auto& q : s.parameters()) names.push_back(q.source_name);
    CHECK(names == std::vector<std::string>{"in", "u16", "i64", "f64", "p", "flag"});
    auto scale = kjit::KernelSignature::of(r, "scale<double>");  // a template: its plain name
    REQUIRE(scale.read_declaration(k_source));
    CHECK(scale.parameters()[0].source_name == "x");
    CHECK_FALSE(scale.parameters()[0].read_only);
    auto plain = kjit::KernelSignature::of(r, "plain");  // extern "C": no const in the PTX
    CHECK_FALSE(plain.parameters()[0].read_only);
    // Another arity, another name, no __global__, a comment: nothing named.
    auto other = kjit::KernelSignature::of(r, "mixed");
    CHECK_FALSE(other.read_declaration("__global__ void mixed(int only) {}"));
    CHECK_FALSE(other.read_declaration("void mixed(const float* a, unsigned short b, long long c, double d, Pair e, bool f);"));
    CHECK_FALSE(other.read_declaration("// __global__ void mixed(const float* a, unsigned short b, long long c, double d, Pair e, bool f) {}"));
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

  TEST_CASE("element_type_of reads the type table's spellings, qualifiers and aliases included") {
    using E = kjit::ElementType;
    const std::pair<const char*, E> rows[] = {
        {"float", E::float32}, {"const float", E::float32}, {"double", E::float64}, {"__half", E::float16},
        {"half", E::float16}, {"__nv_bfloat16", E::bfloat16}, {"nv_bfloat16", E::bfloat16}, {"int8_t", E::int8},
        {"char", E::int8}, {"signed char", E::int8}, {"uint8_t", E::uint8}, {"unsigned char", E::uint8},
        {"bool", E::boolean}, {"short", E::int16}, {"int16_t", E::int16}, {"unsigned short", E::uint16},
        {"uint16_t", E::uint16}, {"int", E::int32}, {"int32_t", E::int32}, {"unsigned", E::uint32},
        {"unsigned int", E::uint32}, {"uint32_t", E::uint32}, {"long long", E::int64}, {"int64_t", E::int64},
        {"long", E::int64}, {"unsigned long long", E::uint64}, {"uint64_t", E::uint64}, {"size_t", E::uint64},
        {"long unsigned int", E::uint64}, {"float2", E::float32x2}, {"double2", E::float64x2},
        {"__half2", E::float16x2}, {"half2", E::float16x2}, {"__nv_bfloat162", E::bfloat16x2}, {"void", E::any},
        {"volatile const std::int32_t", E::int32}};
    for (const auto& [spelling, type] : rows) {
      INFO(spelling);
      REQUIRE(kjit::element_type_of(spelling).has_value());
      CHECK(*kjit::element_type_of(spelling) == type);
    }
    CHECK_FALSE(kjit::element_type_of("Pair").has_value());
    CHECK_FALSE(kjit::element_type_of("float*").has_value());
    CHECK_FALSE(kjit::element_type_of("float4").has_value());
    CHECK(kjit::lane_type(E::float32x2) == E::float32);
    CHECK(kjit::lane_type(E::bfloat16x2) == E::bfloat16);
    CHECK(kjit::lane_type(E::int32) == E::int32);
  }

  TEST_CASE("a pointer's element type from a C++ kernel's mangled name and an extern C kernel's lowered type") {
    // Every row of the table, once as a C++ kernel (the mangled name says the types) and once as
    // an extern "C" kernel (NVRTC's lowered name of its type query does, through its typedefs).
    const std::string params =
        "const float* a0, double* a1, __half* a2, __nv_bfloat16* a3, int8_t* a4, char* a5, signed char* a6, "
        "uint8_t* a7, const unsigned char* __restrict__ a8, bool* a9, short* a10, unsigned short* a11, int* a12, "
        "unsigned* a13, long long* a14, unsigned long long* a15, int64_t* a16, uint64_t* a17, float2* a18, "
        "double2* a19, __half2* a20, __nv_bfloat162* a21, void* a22, Pair* a23, float** a24, size_t n";
    const std::string source = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cstdint>\n"
                               "struct Pair { float a; int b; };\n"
                               "typedef float real_t;\ntypedef real_t* real_ptr;\nusing index_t = long long;\n"
                               "#define REAL double\n"
                               "__global__ void typed(" + params + ") {}\n"
                               "extern \"C\" __global__ void plain(" + params + ") {}\n"
                               "extern \"C\" __global__ void aliased(const real_t* x, real_ptr y, index_t* z, "
                               "REAL* w, index_t n) {}\n";
    using E = kjit::ElementType;
    const std::vector<E> expected = {E::float32, E::float64, E::float16, E::bfloat16, E::int8, E::int8, E::int8,
                                     E::uint8, E::uint8, E::boolean, E::int16, E::uint16, E::int32, E::uint32,
                                     E::int64, E::uint64, E::int64, E::uint64, E::float32x2, E::float64x2,
                                     E::float16x2, E::bfloat16x2, E::any, E::unchecked, E::unchecked, E::unchecked};
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    auto r = rt.compile(kjit::Program("elements.cu", source), {.arch = kjit::Arch::sm(90)});
    auto typed = kjit::KernelSignature::of(r, "typed");
    auto plain = kjit::KernelSignature::of(r, "plain");
    CHECK(plain.parameters()[0].kind == kjit::ParameterKind::pointer);  // the compiler's answer, no source read
    CHECK(plain.parameters()[0].source_name.empty());
    REQUIRE(plain.read_declaration(source));  // the names alone
    CHECK(plain.parameters()[0].source_name == "a0");
    REQUIRE(typed.read_declaration(source));
    for (const auto* s : {&typed, &plain}) {
      REQUIRE(s->size() == expected.size());
      for (std::size_t i = 0; i < expected.size(); ++i) {
        INFO(s->kernel(), " parameter ", i, " ", s->parameters()[i].type);
        CHECK(s->parameters()[i].element == expected[i]);
        if (i < 25) CHECK(s->parameters()[i].kind == kjit::ParameterKind::pointer);
      }
      CHECK(s->parameters()[0].read_only);
      CHECK(s->parameters()[8].read_only);  // const unsigned char* __restrict__
      CHECK_FALSE(s->parameters()[1].read_only);
      CHECK(s->parameters()[25].kind == kjit::ParameterKind::unsigned_integer);  // size_t n
      CHECK(s->parameters()[23].element_note.find("Pair") != std::string::npos);
      CHECK(s->parameters()[24].element_note.find("pointer to a pointer") != std::string::npos);
    }
    CHECK(plain.parameters()[0].type == "float const*");  // as the compiler spells it
    auto aliased = kjit::KernelSignature::of(r, "aliased");
    const auto& a = aliased.parameters();
    CHECK(a[0].element == E::float32);  // const real_t*: a typedef
    CHECK(a[0].read_only);
    CHECK(a[1].element == E::float32);  // real_ptr: a typedef of a pointer
    CHECK(a[1].kind == kjit::ParameterKind::pointer);
    CHECK(a[2].element == E::int64);    // index_t*: a using alias
    CHECK(a[3].element == E::float64);  // REAL*: a macro, as it compiled
    CHECK(a[3].kind == kjit::ParameterKind::pointer);
    CHECK(a[4].kind == kjit::ParameterKind::signed_integer);  // index_t n: long long
  }

  TEST_CASE("a device array of another element type is refused, naming the parameter, both types and the way out") {
    const std::string source =
        "#include <cuda_fp16.h>\n"
        "extern \"C\" __global__ void square_matrix_kernel(const float* matrix, float* result, int width, int height) {}\n"
        "extern \"C\" __global__ void cplx(float2* z, __half2* h, void* any, int n) {}\n"
        "extern \"C\" __global__ void widths(unsigned int* hits, const long long* values) {}\n";
    kjit::test::TempDir dir;
    kjit::Runtime rt(kjit::test::quiet_config(dir / "cache"));
    auto r = rt.compile(kjit::Program("refuse.cu", source), {.arch = kjit::Arch::sm(90)});
    auto s = kjit::KernelSignature::of(r, "square_matrix_kernel");
    REQUIRE(s.read_declaration(source));
    using E = kjit::ElementType;
    CHECK(s.fits(0, E::float32));
    CHECK_FALSE(s.fits(0, E::float64));
    CHECK_NOTHROW(s.check_element(0, E::float32, 7, "torch.float32 tensor"));
    try {
      s.check_element(0, E::float64, 7, "torch.float64 tensor");
      FAIL("a float64 array for const float* was taken");
    } catch (const kjit::ArgumentError& e) {
      const std::string what = e.what();
      INFO(what);
      CHECK(what.find("argument 0 does not fit parameter #0 float const* matrix") != std::string::npos);
      CHECK(what.find("float64 elements (torch.float64 tensor)") != std::string::npos);
      CHECK(what.find("the kernel takes float32 elements") != std::string::npos);
      CHECK(what.find("x.to(float32)") != std::string::npos);
      CHECK(what.find("kjit.raw(x)") != std::string::npos);
    }
    auto w = kjit::KernelSignature::of(r, "widths");
    REQUIRE(w.read_declaration(source));
    CHECK_NOTHROW(w.check_element(0, E::int32, 3, "torch.int32 tensor"));  // unsigned int*: either signedness
    CHECK_NOTHROW(w.check_element(1, E::uint64, 3, "torch.uint64 tensor"));  // const long long*
    CHECK_THROWS_AS(w.check_element(0, E::int16, 3, "torch.int16 tensor"), kjit::ArgumentError);
    CHECK_THROWS_AS(w.check_element(0, E::float32, 3, "torch.float32 tensor"), kjit::ArgumentError);
    CHECK_THROWS_WITH_AS(s.check_element(1, E::float16, 4, "cupy typestr '<f2'"),
                         doctest::Contains("float16 elements (cupy typestr '<f2')"), kjit::ArgumentError);
    CHECK_THROWS_WITH_AS(s.refuse_layout(0, "torch.Tensor", "shape (4, 3), strides (1, 4)"),
                         doctest::Contains("shape (4, 3), strides (1, 4)"), kjit::ArgumentError);
    CHECK_THROWS_WITH_AS(s.refuse_layout(0, "torch.Tensor", "shape (4, 3), strides (1, 4)"),
                         doctest::Contains(".contiguous()"), kjit::ArgumentError);
    auto c = kjit::KernelSignature::of(r, "cplx");
    REQUIRE(c.read_declaration(source));
    CHECK_NOTHROW(c.check_element(0, E::float32x2, 8, "complex64"));   // a complex dtype
    CHECK_NOTHROW(c.check_element(0, E::float32, 2, "float32 [..., 2]"));  // a last dimension of 2
    CHECK_THROWS_WITH_AS(c.check_element(0, E::float32, 3, "float32 [..., 3]"),
                         doctest::Contains("or float32 whose last dimension is 2"), kjit::ArgumentError);
    CHECK_THROWS_AS(c.check_element(0, E::float64x2, 8, "complex128"), kjit::ArgumentError);
    CHECK_NOTHROW(c.check_element(1, E::float16, 2, "float16 [..., 2]"));
    for (auto e : {E::float64, E::uint8, E::bfloat16x2, E::boolean}) CHECK_NOTHROW(c.check_element(2, e, 5, "any"));
  }
}
