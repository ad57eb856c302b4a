#include "core/tune/synthetic_arguments.hpp"

#include <kjit/error.hpp>

#include <fmt/format.h>

#include <charconv>

namespace kjit::tune {

std::vector<unsigned char> make_elements(const ArgumentType& type, std::size_t count, std::string_view fill,
                                         std::uint64_t seed) {
  std::vector<unsigned char> out(count * type.element_size);
  if (fill == "zero") return out;
  if (fill == "random") {
    // splitmix64: a buffer of 16M floats in about 40 ms (std::mt19937_64 with a distribution: 290 ms).
    std::uint64_t state = seed;
    const auto next = [&state] {
      std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      return z ^ (z >> 31);
    };
    for (std::size_t k = 0; k < count; ++k) {
      const std::uint64_t u = next();
      const double real = static_cast<double>(u >> 40) * (1.0 / 8388608.0) - 1.0;  // 24 bits: [-1, 1)
      store_element(type, out.data() + k * type.element_size, real, static_cast<long long>((u >> 32) % 100));
    }
    return out;
  }
  double v = 0;
  const auto [end, ec] = std::from_chars(fill.data(), fill.data() + fill.size(), v);
  if (ec != std::errc() || end != fill.data() + fill.size()) {
    throw UsageError(fmt::format("fill \"{}\": expected random, zero or a number", fill));
  }
  for (std::size_t k = 0; k < count; ++k) store_element(type, out.data() + k * type.element_size, v, static_cast<long long>(v));
  return out;
}

SyntheticArguments::SyntheticArguments(const CompiledSpec& spec, std::span<const TuneValue> shape, long long sm_count,
                                       std::uint64_t seed) {
  const auto& args = spec.spec().arguments;
  const auto& types = spec.argument_types();
  m_addresses.resize(args.size());
  m_scalars.resize(args.size());
  m_pointers.resize(args.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!types[i].pointer) {
      m_scalars[i] = spec.scalar_bytes(i, shape, sm_count);
      m_pointers[i] = m_scalars[i].data();
      continue;
    }
    const long long n = spec.count(i, shape, sm_count);
    if (n < 1) {
      throw UsageError(fmt::format("making argument {} ({}) of tuning \"{}\" for {}: count \"{}\" is {}; a buffer needs "
                                   "at least 1 element",
                                   i, args[i].name, spec.spec().name, CompiledSpec::shape_text(shape), args[i].count, n));
    }
    DeviceMemory& m = m_buffers.emplace_back(static_cast<std::size_t>(n) * types[i].element_size, Device::current());
    const auto bytes = make_elements(types[i], static_cast<std::size_t>(n), args[i].fill, seed + i);
    m.copy_from_host(bytes.data(), static_cast<std::size_t>(n), types[i].element_size);
    m_addresses[i] = m.address();
    m_pointers[i] = &m_addresses[i];
  }
}

}  // namespace kjit::tune
