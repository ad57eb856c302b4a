// kjit::inspect::template_kernels: compile/'s scan of a source for its template kernels, and those
// of them a compile made no instance of.
#include "core/spi/compile.hpp"
#include "core/spi/driver.hpp"

#include <kjit/tools/inspect.hpp>

#include <algorithm>

namespace kjit::inspect {

std::vector<std::string> template_kernels(std::string_view source) { return compile::template_kernels(source); }

std::vector<std::string> uninstantiated_templates(std::string_view source, std::string_view ptx) {
  std::vector<std::string> out = compile::template_kernels(source);
  if (out.empty()) return out;
  // Each kernel's plain name less its template arguments: "ops::gelu" for ops::gelu<float>.
  std::vector<std::string> made;
  for (const std::string& symbol : parse_ptx(ptx).kernel_names()) {
    if (!symbol.starts_with("_Z")) continue;
    std::string plain = driver::plain_name(driver::demangle(symbol));
    if (const std::size_t open = plain.find('<'); open != std::string::npos) plain.resize(open);
    // An anonymous namespace is not written in a name expression (template_kernels leaves it out).
    constexpr std::string_view anonymous = "(anonymous namespace)::";
    for (std::size_t at; (at = plain.find(anonymous)) != std::string::npos;) plain.erase(at, anonymous.size());
    made.push_back(std::move(plain));
  }
  std::erase_if(out, [&](const std::string& t) { return std::find(made.begin(), made.end(), t) != made.end(); });
  return out;
}

}  // namespace kjit::inspect
