// kjit's exceptions in Python: kjit.Error (a RuntimeError) and below it CompileError, LinkError,
// CudaError, UsageError (also a ValueError), ArgumentError (also a TypeError), DriverNotFoundError,
// NvrtcError, UnavailableError and IoError, each with the C++ exception's fields as attributes.
#pragma once

#include <pybind11/pybind11.h>

#include <exception>

namespace kjit::python {

// Makes the exception types in `m` and registers the translator pybind11's functions use.
void register_exceptions(pybind11::module_& m);
// Sets the Python error for `p`, as pybind11's translator does, for functions CPython calls
// directly (the launch): kjit's errors as their Python types, a pending Python error restored,
// anything else a RuntimeError. Never throws.
void set_python_error(std::exception_ptr p) noexcept;

}  // namespace kjit::python
