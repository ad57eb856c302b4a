// kjit::half and kjit::bfloat16: host-side storage for CUDA's __half and __nv_bfloat16 (the
// same 16 bits), so typed kernels can declare them and host code can fill and check buffers
// without the CUDA headers. Conversions round to nearest even; NaN stays NaN.
#pragma once

#include <bit>
#include <cstdint>

namespace kjit {

struct half {
  std::uint16_t bits = 0;
  half() = default;
  explicit half(float value) : bits(from(value)) {}
  explicit operator float() const { return to(bits); }

  static std::uint16_t from(float value) {
    const std::uint32_t f = std::bit_cast<std::uint32_t>(value);
    const std::uint32_t sign = (f >> 16) & 0x8000u;
    const std::uint32_t abs = f & 0x7fffffffu;
    if (abs >= 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds past 65504
    if (abs < 0x38800000u) {                                                   // subnormal or zero
      // value * 2^24 rounded to nearest even gives the subnormal's bits.
      const float scaled = std::bit_cast<float>(abs) * 16777216.0f;
      const std::uint32_t m = static_cast<std::uint32_t>(scaled);
      const float rest = scaled - static_cast<float>(m);
      const std::uint32_t r = m + ((rest > 0.5f || (rest == 0.5f && (m & 1u))) ? 1u : 0u);
      return static_cast<std::uint16_t>(sign | r);
    }
    const std::uint32_t mantissa = abs + 0xc8000fffu + ((abs >> 13) & 1u);  // rebias, round to even
    return static_cast<std::uint16_t>(sign | (mantissa >> 13));
  }
  static float to(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exponent = (h >> 10) & 0x1fu;
    const std::uint32_t mantissa = h & 0x3ffu;
    if (exponent == 0x1fu) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
    if (exponent == 0) {
      const float v = static_cast<float>(mantissa) * (1.0f / 16777216.0f);
      return sign ? -v : v;
    }
    return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  }
};

struct bfloat16 {
  std::uint16_t bits = 0;
  bfloat16() = default;
  explicit bfloat16(float value) : bits(from(value)) {}
  explicit operator float() const { return to(bits); }

  static std::uint16_t from(float value) {
    const std::uint32_t f = std::bit_cast<std::uint32_t>(value);
    if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((f >> 16) | 0x40u);  // quiet NaN
    return static_cast<std::uint16_t>((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
  }
  static float to(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }
};

static_assert(sizeof(half) == 2 && sizeof(bfloat16) == 2);

}  // namespace kjit
