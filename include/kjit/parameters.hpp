// kjit::KernelSignature: a kernel's real parameter list, for callers that decide argument types
// at run time (the Python package, a generic launcher) instead of at compile time as
// Kernel<Signature> does. It is read from the module's PTX (`.param .f32`, `.u32`, `.u64`,
// `.align 8 .b8 name[16]`: the width, integer or floating point, a struct's size and alignment)
// and, for a C++ kernel, from its mangled name (pointer or integer, signed or unsigned, bool, the
// C++ type's spelling). An `extern "C"` kernel has no mangled name: its types are NVRTC's answer
// to the type query of its compile (CompileResult::kernel_types, compile::KernelTypes), read by of();
// without one its `.u64` is a pointer or a 64-bit integer and its `.u32` an int of either
// signedness, unchecked. A pointer's element type (ElementType: `float` of `const float*`) comes
// from the compiler the same way; a device array passed for it must hold that type.
//
// The pack_* calls check one argument against one parameter and write it into the parameter's
// slot (parameters()[i].size bytes) of the caller's buffer; they allocate nothing on success and
// throw ArgumentError naming the parameter (index, PTX name), what was given and the whole list.
#pragma once

#include <kjit/export.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kjit {

class CompileResult;

enum class ParameterKind {
  pointer,             // T* (a C++ kernel's mangled name says so)
  pointer_or_integer,  // an extern "C" kernel's .u64/.s64/.b64: a device address or a 64-bit integer
  signed_integer,      // int, long long, short, signed char (C++), .s32 ... (PTX)
  unsigned_integer,    // unsigned, size_t, unsigned char (C++)
  integer,             // an extern "C" kernel's .u32/.u16/.u8/.b32: either signedness
  floating,            // float, double (.f32, .f64)
  boolean,             // bool (C++)
  bytes,               // a struct or array passed by value (.b8 name[N]), __half and friends
};
KJIT_API std::string_view to_string(ParameterKind kind);

// What a pointer parameter points to, as a device array's element type. Every spelling of each
// is one row of element_types() (docs/python.md's table is checked against it).
enum class ElementType : std::uint8_t {
  unchecked,  // not known (a struct, a pointer to a pointer, no type from the compiler): any array fits
  any,        // void*: any array fits
  float16, bfloat16, float32, float64, float8_e4m3, float8_e5m2,
  int8, uint8, boolean, int16, uint16, int32, uint32, int64, uint64,
  float16x2, bfloat16x2, float32x2, float64x2,  // half2, __nv_bfloat162, float2, double2
};

// One element type and every name it goes by: the one table behind the C++ check, the Python
// package's dtype lookups (torch, CuPy/numpy, __cuda_array_interface__, DLPack) and the docs.
struct ElementTypeRow {
  ElementType type;
  std::string_view name;     // "float32"
  std::string_view cpp;      // C++ spellings, ", " between them: "float"; "long, long long, int64_t, ..."
  std::string_view torch;    // torch's dtype attribute ("float32"), "" for none
  std::string_view numpy;    // numpy's (and CuPy's) dtype name, "" for none
  std::string_view typestr;  // __cuda_array_interface__'s typestr less its byte order ("f4"), "" for none
  std::uint8_t dlpack_code;  // DLPack's DLDataTypeCode (kDLFloat 2, kDLFloat8_e4m3fn 10, ...)
  std::uint8_t dlpack_bits;  // 0: no DLPack type
  ElementType lane;          // the scalar of a two-lane type (float32 for float32x2), else `type`
};
// Every row, in ElementType's order from float16 (unchecked and any are no element types of arrays).
KJIT_API std::span<const ElementTypeRow> element_types();
// "float32", "bfloat16x2", "void" (any), "unchecked".
KJIT_API std::string_view to_string(ElementType type);
// The element type a C++ type names, qualifiers ignored: "float", "const __half", "int64_t",
// "long long", "unsigned char", "float2", "void", ...; nullopt for any other name.
KJIT_API std::optional<ElementType> element_type_of(std::string_view cpp_type);
// The scalar of a two-lane type (float32 for float32x2), or the type itself.
KJIT_API ElementType lane_type(ElementType type);

struct Parameter {
  std::size_t index = 0;
  std::string name;      // the PTX name ("square_param_2")
  std::string type;      // the C++ type where the mangled name gives it ("float const*"), else the PTX type
  std::string ptx_type;  // ".u64", ".f32", ".b8[16]"
  ParameterKind kind = ParameterKind::bytes;
  std::size_t size = 0;   // bytes
  std::size_t align = 1;  // bytes
  // A pointer to const ("float const*", a C++ kernel's mangled name says so): the kernel never
  // writes through it. False for every other parameter and for an extern "C" kernel's pointers,
  // whose PTX does not say.
  bool read_only = false;
  // The parameter's name in the kernel's source ("matrix"), once read_declaration found it; "" before.
  std::string source_name;
  // A pointer's element type (ElementType::unchecked for every other parameter) and, when it is
  // unchecked, why ("a macro or a type kjit cannot resolve: REAL").
  ElementType element = ElementType::unchecked;
  std::string element_note;
};

class KJIT_API KernelSignature {
public:
  KernelSignature() = default;
  // The signature of kernel `symbol` (its PTX, mangled name) in `ptx`; `kernel` is the name it was
  // asked for, used in messages. Throws UsageError when the PTX has no such entry.
  KernelSignature(std::string_view ptx, std::string symbol, std::string kernel);
  // The signature of kernel `name` of a compile's result, without a GPU: `name` as written
  // (extern "C"), a name expression given to Program::instantiate, a mangled name, or a C++
  // kernel's plain name ("square" for _Z6squarePfi). Throws UsageError for a missing or
  // overloaded name, listing the kernels there are.
  static KernelSignature of(const CompileResult& result, std::string_view name);

  const std::string& kernel() const noexcept { return m_kernel; }
  const std::string& symbol() const noexcept { return m_symbol; }
  const std::vector<Parameter>& parameters() const noexcept { return m_parameters; }
  std::size_t size() const noexcept { return m_parameters.size(); }
  // "square_matrix_kernel(float const* [.u64], float* [.u64], int [.u32], int [.u32])".
  std::string to_string() const;
  // A slot for every parameter, in order, each aligned: the bytes a caller's buffer needs.
  std::size_t buffer_bytes() const noexcept { return m_buffer_bytes; }
  std::size_t offset(std::size_t index) const noexcept { return m_offsets[index]; }

  // Reads the parameters' names into Parameter::source_name from the kernel's declaration in
  // `source` (the CUDA source it was compiled from: `__global__ void square(const float* matrix,
  // float* result, int n)`), read with kjit's lexer. Names only: no type is ever taken from the
  // text. The declaration must be a __global__ function of the kernel's plain name with as many
  // parameters as the PTX has; false (nothing set) when there is none or several that disagree.
  bool read_declaration(std::string_view source);

  // Throws ArgumentError when `given` is not the number of parameters.
  void check_count(std::size_t given) const;
  // Integers (a Python int, a numpy integer): refused for floating, pointer and bytes
  // parameters and when out of the parameter's range; bool parameters take 0 and 1.
  void pack_signed(std::size_t index, std::int64_t value, void* slot) const;
  void pack_unsigned(std::size_t index, std::uint64_t value, void* slot) const;
  // A floating-point value: floating parameters only (a float for an int is refused).
  void pack_floating(std::size_t index, double value, void* slot) const;
  void pack_boolean(std::size_t index, bool value, void* slot) const;
  // A device address (a tensor's data pointer; 0 for None): pointer parameters.
  void pack_pointer(std::size_t index, std::uint64_t address, void* slot) const;
  // Whether a device array of element type `given` fits parameter `index` at once (the same
  // type, or a parameter that checks none); when not, check_element decides.
  bool fits(std::size_t index, ElementType given) const noexcept {
    const ElementType e = m_parameters[index].element;
    return e == given || e == ElementType::unchecked || e == ElementType::any;
  }
  // A device array for pointer parameter `index`: its element type `given` (`shown`: the array's
  // own spelling, "torch.float64") and its last dimension, which lets a float32 array whose last
  // dimension is 2 stand for float2 (complex dtypes fit too), and an integer array fit a pointer
  // to the other signedness of its width (int32 for unsigned*). Throws ArgumentError naming the
  // parameter, the kernel's type and the array's, and the ways out.
  void check_element(std::size_t index, ElementType given, std::int64_t last_dimension, std::string_view shown) const;
  // A non-contiguous device array for parameter `index`: throws ArgumentError naming the
  // parameter, the shape and strides (`layout`: "shape (4, 3), strides (1, 4)") and the ways out.
  [[noreturn]] void refuse_layout(std::size_t index, std::string_view what, std::string_view layout) const;
  // Raw bytes of exactly the parameter's size (a struct): bytes parameters, or any parameter
  // when the size matches.
  void pack_bytes(std::size_t index, const void* data, std::size_t size, void* slot) const;
  // Refuses argument `index`: `given` says what it was ("str 'abc'", "torch.Tensor on cpu").
  [[noreturn]] void refuse(std::size_t index, std::string_view given, std::string_view why = {}) const;

private:
  static KernelSignature find(const CompileResult& result, std::string_view name);
  // An extern "C" kernel's C++ types from the compile's type query (CompileResult::kernel_types),
  // or the note saying why there are none.
  void add_compiled_types(const CompileResult& result);

  std::string m_kernel;
  std::string m_symbol;
  std::vector<Parameter> m_parameters;
  std::vector<std::size_t> m_offsets;
  std::size_t m_buffer_bytes = 0;
};

}  // namespace kjit
