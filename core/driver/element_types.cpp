// kjit::element_types(): the one table of element types and their names (C++, torch, numpy/CuPy,
// __cuda_array_interface__, DLPack). KernelSignature's element check, the Python package's dtype
// lookups and docs/python.md's table all read it (tests/unit/test_driver_element_types.cpp).
#include <kjit/parameters.hpp>

#include <array>

namespace kjit {
namespace {

using E = ElementType;

// DLPack's type codes (dlpack.h 1.1; Debian's 0.6 header lacks the newer ones).
constexpr std::uint8_t k_int = 0, k_uint = 1, k_float = 2, k_bfloat = 4, k_complex = 5, k_bool = 6,
                       k_float8_e4m3fn = 10, k_float8_e5m2 = 12;

constexpr std::array<ElementTypeRow, 19> k_rows = {{
    {E::float16, "float16", "__half, half, nv_half", "float16", "float16", "f2", k_float, 16, E::float16},
    {E::bfloat16, "bfloat16", "__nv_bfloat16, nv_bfloat16", "bfloat16", "", "", k_bfloat, 16, E::bfloat16},
    {E::float32, "float32", "float", "float32", "float32", "f4", k_float, 32, E::float32},
    {E::float64, "float64", "double", "float64", "float64", "f8", k_float, 64, E::float64},
    {E::float8_e4m3, "float8_e4m3", "__nv_fp8_e4m3", "float8_e4m3fn", "", "", k_float8_e4m3fn, 8, E::float8_e4m3},
    {E::float8_e5m2, "float8_e5m2", "__nv_fp8_e5m2", "float8_e5m2", "", "", k_float8_e5m2, 8, E::float8_e5m2},
    {E::int8, "int8", "signed char, char, int8_t", "int8", "int8", "i1", k_int, 8, E::int8},
    {E::uint8, "uint8", "unsigned char, uint8_t", "uint8", "uint8", "u1", k_uint, 8, E::uint8},
    {E::boolean, "bool", "bool", "bool", "bool", "b1", k_bool, 8, E::boolean},
    {E::int16, "int16", "short, int16_t", "int16", "int16", "i2", k_int, 16, E::int16},
    {E::uint16, "uint16", "unsigned short, uint16_t, ushort", "uint16", "uint16", "u2", k_uint, 16, E::uint16},
    {E::int32, "int32", "int, int32_t", "int32", "int32", "i4", k_int, 32, E::int32},
    {E::uint32, "uint32", "unsigned int, uint32_t, uint", "uint32", "uint32", "u4", k_uint, 32, E::uint32},
    {E::int64, "int64", "long, long long, int64_t, ptrdiff_t, intptr_t, ssize_t", "int64", "int64", "i8", k_int, 64,
     E::int64},
    {E::uint64, "uint64", "unsigned long, unsigned long long, uint64_t, size_t, uintptr_t, ulong", "uint64", "uint64",
     "u8", k_uint, 64, E::uint64},
    {E::float16x2, "float16x2", "__half2, half2, nv_half2", "complex32", "", "c4", k_complex, 32, E::float16},
    {E::bfloat16x2, "bfloat16x2", "__nv_bfloat162, nv_bfloat162", "", "", "", 0, 0, E::bfloat16},
    {E::float32x2, "float32x2", "float2, cuFloatComplex, cuComplex", "complex64", "complex64", "c8", k_complex, 64,
     E::float32},
    {E::float64x2, "float64x2", "double2, cuDoubleComplex", "complex128", "complex128", "c16", k_complex, 128,
     E::float64},
}};

}  // namespace

std::span<const ElementTypeRow> element_types() { return k_rows; }

std::string_view to_string(ElementType type) {
  if (type == E::unchecked) return "unchecked";
  if (type == E::any) return "any (void)";
  for (const auto& row : k_rows) {
    if (row.type == type) return row.name;
  }
  return "?";
}

ElementType lane_type(ElementType type) {
  for (const auto& row : k_rows) {
    if (row.type == type) return row.lane;
  }
  return type;
}

}  // namespace kjit
