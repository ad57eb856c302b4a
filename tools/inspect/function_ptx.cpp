// kjit::inspect::function_ptx: one function of a PTX module, with the module's statements.
#include "tools/inspect/function_names.hpp"

#include <kjit/error.hpp>
#include <kjit/tools/inspect.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kjit::inspect {

std::string function_ptx(std::string_view ptx, std::string_view name) {
  PtxModule module = parse_ptx(ptx);
  std::vector<std::string> symbols;
  for (const PtxFunction& f : module.functions) {
    if (f.is_definition) symbols.push_back(f.name);
  }
  const std::optional<std::string> symbol =
      resolve_function(symbols, name, fmt::format("selecting kernel \"{}\" from the PTX", name));
  const PtxFunction* f = module.find(symbol.value_or(std::string(name)));
  if (f == nullptr) {
    const auto kernels = module.kernel_names();
    const auto shown = display_names(kernels);
    std::vector<std::string> listed;
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      listed.push_back(shown[i] == kernels[i] ? kernels[i] : fmt::format("{} ({})", shown[i], kernels[i]));
    }
    throw UsageError(fmt::format("selecting kernel \"{}\" from the PTX: there is no such function; kernels: {}", name,
                                 listed.empty() ? std::string("none") : fmt::format("{}", fmt::join(listed, ", "))));
  }
  PtxFunction only = *f;
  module.functions = {std::move(only)};
  return to_ptx(module);
}

}  // namespace kjit::inspect
