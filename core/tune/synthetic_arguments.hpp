// kjit::tune::SyntheticArguments: the arguments `kjit tune` makes up for one shape of a spec:
// device buffers of the spec's types and counts (random, zero or a constant, as its "fill" says)
// and its scalars' values, as the driver's array of argument pointers.
#pragma once

#include "core/base/tools_api.hpp"

#include <kjit/device.hpp>
#include <kjit/memory.hpp>

#include "core/tune/spec.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace kjit::tune {

class KJIT_TOOLS_API SyntheticArguments {
public:
  // On the current device. Throws UsageError for a count below 1, and what allocating throws.
  SyntheticArguments(const CompiledSpec& spec, std::span<const TuneValue> shape, long long sm_count,
                     std::uint64_t seed);
  SyntheticArguments(const SyntheticArguments&) = delete;
  SyntheticArguments& operator=(const SyntheticArguments&) = delete;

  void** pointers() { return m_pointers.empty() ? nullptr : m_pointers.data(); }

private:
  std::vector<DeviceMemory> m_buffers;
  std::vector<std::uint64_t> m_addresses;                // per argument (pointers)
  std::vector<std::vector<unsigned char>> m_scalars;     // per argument (scalars)
  std::vector<void*> m_pointers;
};

// `count` elements of `type` as `fill` says (random: floats in [-1, 1), integers in [0, 100);
// zero; or the number): the host bytes kjit tune copies into a buffer.
std::vector<unsigned char> make_elements(const ArgumentType& type, std::size_t count, std::string_view fill,
                                         std::uint64_t seed);

}  // namespace kjit::tune
