// The names of a program's functions as a user writes them: a C++ function's mangled name
// ("_Z20square_matrix_kernelPKfPfii") shown as its plain name ("square_matrix_kernel", as the
// profiler shows it), or as its whole declaration where two functions share the plain name
// (overloads); and a plain name resolved to the one function it names, as Module::kernel and
// the Python package accept it. Demangling is driver/'s (`symbols`). Internal to runtime/inspect.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::inspect {

// The display names of `symbols`, in order: each one's plain name, or its declaration where
// another of `symbols` has the same plain name; a name that is not mangled stays as it is.
std::vector<std::string> display_names(const std::vector<std::string>& symbols);

// The one of `symbols` that `name` names: itself, the C++ function whose plain name it is (a
// template's instance spaced either way: "scale<float,256>" or "scale<float, 256>"), or a
// template's one instance by the template's name ("copy_kernel"); failing those, the same for a
// function in a namespace named without it ("relu" for ops::relu, "gelu<float>" for
// ops::gelu<float>). nullopt when none does; throws UsageError (`what` says what was being done)
// when the plain name is overloaded, or a template's name has several instances, or an
// unqualified name fits functions of several namespaces ("ambiguous", naming them).
std::optional<std::string> resolve_function(const std::vector<std::string>& symbols, std::string_view name,
                                            std::string_view what);

}  // namespace kjit::inspect
