// kjit._kjit's parts, one per concept, each adding its types and functions to the extension
// (module.cpp calls them in order), and the conversions they share.
#pragma once

#include <kjit/parameters.hpp>
#include <kjit/runtime_config.hpp>

#include <pybind11/pybind11.h>

#include <string>
#include <string_view>

namespace kjit::python {

namespace py = pybind11;

void bind_compile(py::module_& m);  // compile.cpp: Program, CompileOptions, CompileResult, KernelSignature
void bind_kernels(py::module_& m);  // kernels.cpp: Kernel (k[grid, block]), Stream, GlobalHandle
void bind_runtime(py::module_& m);  // runtime.cpp: Runtime (its options from C++'s table), Module, Link, load_inline
void bind_tools(py::module_& m);    // tools.cpp: diff, resources, sass, bench, Profiler
void bind_warm(py::module_& m);     // warm.cpp: Shard, warm, merge_bundles

// kjit.Runtime's keywords (RuntimeConfig::options()' names) over the environment's configuration.
RuntimeConfig runtime_config(const py::kwargs& kw);

// A kernel's parameters as dicts (index, name, type, kind, size, ...).
py::list parameters_list(const KernelSignature& s);

// Bytes as Python bytes.
py::bytes as_bytes(const std::string& s);
// Text from a compiler or a file as a str: UTF-8, any byte that is not shown as U+FFFD (a log
// holding Latin-1 is still read).
py::str as_text(std::string_view s);

}  // namespace kjit::python
