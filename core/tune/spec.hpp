// kjit::tune::CompiledSpec: a TuneSpec (a manifest's "tuning" entry) checked and its expressions
// parsed once: the tuning key, grid, buffer sizes and scalar values of a call, from the call's
// shape. Pure (no CUDA): the Manifest reader checks an entry with it, the TunerEngine launches
// with it, and tune/synthetic_arguments makes `kjit tune`'s arguments from it.
#pragma once

#include "core/base/tools_api.hpp"

#include <kjit/tune.hpp>

#include "core/tune/expression.hpp"

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kjit::tune {

// A kernel argument's type as a manifest names it.
struct ArgumentType {
  enum class Scalar : std::uint8_t { f32, f64, f16, bf16, i8, u8, i16, u16, i32, u32, i64, u64 };
  Scalar scalar = Scalar::f32;
  bool pointer = false;
  std::size_t element_size = 4;  // of the scalar (a pointer's element)
  std::size_t size() const { return pointer ? sizeof(void*) : element_size; }
  bool is_float() const { return scalar == Scalar::f32 || scalar == Scalar::f64 || scalar == Scalar::f16 || scalar == Scalar::bf16; }
};
// "const float*", "__half*", "int", "unsigned long long", ... Throws UsageError listing the known.
ArgumentType parse_argument_type(std::string_view text);
// Writes one element of `type`'s scalar at `at`: `real` for a floating type, `integer` otherwise.
void store_element(const ArgumentType& type, unsigned char* at, double real, long long integer);

// The variables every expression may use besides the shape's; the grid's may also use the
// candidate's fields.
inline constexpr const char* k_candidate_variables[] = {"block", "block_x", "block_y", "block_z", "param",
                                                        "shared_mem"};
inline constexpr const char* k_device_variable = "sm_count";

class CompiledSpec {
public:
  // Checks `spec` (throws UsageError saying which field of which entry is wrong).
  KJIT_TOOLS_API explicit CompiledSpec(TuneSpec spec);

  const TuneSpec& spec() const { return m_spec; }
  const std::vector<ArgumentType>& argument_types() const { return m_types; }
  bool uses_sm_count() const { return m_uses_sm_count; }

  // `sm_count`: the device's, when uses_sm_count(). Throws UsageError for a value the shape lacks.
  TuneKey key(std::span<const TuneValue> shape) const;
  Dim3 grid(const TuneCandidate& candidate, std::span<const TuneValue> shape, long long sm_count) const;
  // A pointer argument's element count, a scalar argument's value (integers; see scalar_bytes).
  long long count(std::size_t argument, std::span<const TuneValue> shape, long long sm_count) const;
  // A scalar argument's bytes as the kernel takes them (its value converted to its type).
  std::vector<unsigned char> scalar_bytes(std::size_t argument, std::span<const TuneValue> shape,
                                          long long sm_count) const;
  // The reset and restore outputs of a call whose argument pointers are `args` (the driver's array).
  TuneBuffers buffers(std::span<const TuneValue> shape, void* const* args, long long sm_count) const;
  // What the decision key holds of the launch: "grid ceil_div(n, block); const float* x [n], float a = 1.5, ...".
  std::string launch_text() const;
  // The spec's own shapes (for kjit tune), as TuneValues over its storage.
  KJIT_TOOLS_API std::vector<std::vector<TuneValue>> shapes() const;
  // "n=1048576 m=7"
  KJIT_TOOLS_API static std::string shape_text(std::span<const TuneValue> shape);

private:
  struct Key {
    std::string name;
    bool bucketed = false;
  };
  long long evaluate(const Expression& e, std::span<const TuneValue> shape, const TuneCandidate* candidate,
                     long long sm_count) const;

  TuneSpec m_spec;
  std::vector<Key> m_key;
  std::vector<Expression> m_grid;
  std::vector<ArgumentType> m_types;
  std::vector<std::optional<Expression>> m_amounts;  // per argument: count (pointer) or integer value (scalar)
  std::vector<std::optional<double>> m_literals;    // per scalar argument given as a number
  bool m_uses_sm_count = false;
};

}  // namespace kjit::tune
