#include "core/compile/kernel_types.hpp"

#include "core/compile/source/kernel_declarations.hpp"

#include <cxxabi.h>

#include <algorithm>

#include <cstdlib>
#include <memory>

namespace kjit::compile {

std::vector<KernelTypeQuery> KernelTypes::queries(std::string_view source, const std::vector<std::string>& arguments) {
  for (const auto& a : arguments) {
    for (std::string_view old : {"c++03", "c++11"}) {
      if (a.ends_with(old) && (a.starts_with("-std") || a.starts_with("--std"))) return {};
    }
  }
  std::vector<KernelTypeQuery> out;
  const KernelDeclarations declarations(source);
  for (const KernelDeclaration& d : declarations.all()) {
    if (!d.extern_c || d.is_template) continue;
    const bool seen = std::any_of(out.begin(), out.end(), [&d](const KernelTypeQuery& q) { return q.kernel == d.name; });
    if (seen) continue;
    out.push_back({d.name, "&" + std::string(k_kernel_type_variable) + "<decltype(&" + d.qualified + ")>"});
  }
  return out;
}

std::string_view KernelTypes::declaration() {
  return "\ntemplate <typename F> static __device__ char __kjit_kernel_type = 0;\n";
}

std::optional<std::vector<std::string>> KernelTypes::parameter_types(std::string_view lowered) {
  if (lowered.find(k_kernel_type_variable) == std::string_view::npos) return std::nullopt;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> d(abi::__cxa_demangle(std::string(lowered).c_str(), nullptr, nullptr,
                                                                    &status),
                                                &std::free);
  if (status != 0 || !d) return std::nullopt;
  // "..__kjit_kernel_type<void (*)(float const*, float*, int)>"
  const std::string_view text = d.get();
  const std::size_t open = text.find("(*)(");
  if (open == std::string_view::npos) return std::nullopt;
  std::vector<std::string> out;
  int depth = 0;
  std::size_t start = open + 4;
  for (std::size_t i = start; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<' || c == '(' || c == '[') ++depth;
    else if ((c == '>' || c == ']') && depth > 0) --depth;
    else if (c == ')' && depth > 0) --depth;
    else if ((c == ',' || c == ')') && depth == 0) {
      std::string_view one = text.substr(start, i - start);
      while (!one.empty() && one.front() == ' ') one.remove_prefix(1);
      while (!one.empty() && one.back() == ' ') one.remove_suffix(1);
      if (!(c == ')' && out.empty() && (one.empty() || one == "void"))) out.emplace_back(one);
      if (c == ')') return out;
      start = i + 1;
    }
  }
  return std::nullopt;
}

bool KernelTypes::is_added_symbol(std::string_view symbol) {
  return symbol.find(k_kernel_type_variable) != std::string_view::npos;
}

}  // namespace kjit::compile
