// kjit::inspect::function_ptx: one function of a PTX module, with the module's statements.
#include <kjit/error.hpp>
#include <kjit/tools/inspect.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kjit::inspect {

std::string function_ptx(std::string_view ptx, std::string_view name) {
  PtxModule module = parse_ptx(ptx);
  const PtxFunction* f = module.find(name);
  if (f == nullptr) {
    const auto kernels = module.kernel_names();
    throw UsageError(fmt::format("selecting kernel \"{}\" from the PTX: there is no such function; kernels: {}", name,
                                 kernels.empty() ? std::string("none") : fmt::format("{}", fmt::join(kernels, ", "))));
  }
  PtxFunction only = *f;
  module.functions = {std::move(only)};
  return to_ptx(module);
}

}  // namespace kjit::inspect
