// kjit::compile::KernelDeclarations: the __global__ functions a CUDA source declares, read from
// its tokens (compile::lex): each one's name, its namespace, whether it is extern "C", and its
// parameters as written (the type's tokens and the parameter's name). What the text says, not
// what the compiler made of it: kjit takes no type from here (KernelSignature asks NVRTC), only
// the parameters' names and the list of extern "C" kernels to ask NVRTC about. Object-like macros
// whose replacement holds __global__ or extern "C" (#define KERNEL extern "C" __global__) are
// read through; other macros are not expanded. Linear time; never throws.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::compile {

struct DeclaredParameter {
  std::string type;  // the type's tokens, one space apart ("const float *"); an array's [] as "*"
  std::string name;  // "" when the declaration names none
};

struct KernelDeclaration {
  std::string name;        // as written ("square")
  std::string qualified;   // with its namespaces ("ops::square"; anonymous ones left out)
  bool extern_c = false;   // in an extern "C" declaration or block
  bool is_template = false;
  std::vector<DeclaredParameter> parameters;
};

class KernelDeclarations {
public:
  explicit KernelDeclarations(std::string_view source);

  const std::vector<KernelDeclaration>& all() const noexcept { return m_kernels; }
  // The parameters of the kernel `name` (unqualified) with `arity` parameters; nullopt when there
  // is none, or several that disagree.
  std::optional<std::vector<DeclaredParameter>> parameters(std::string_view name, std::size_t arity) const;

private:
  std::vector<KernelDeclaration> m_kernels;
};

}  // namespace kjit::compile
