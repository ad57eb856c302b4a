// The launch from Python: `k[grid, block](*args)` in one C-level call each. kjit.Kernel's
// subscript makes a kjit.Launcher, a small CPython object called through vectorcall (no pybind11
// dispatch, no argument tuple); calling it packs the arguments into a stack buffer (arguments.hpp),
// asks libkjit to launch on the tensors' device and stream, and releases the GIL for the driver.
#pragma once

#include <kjit/kernel.hpp>
#include <kjit/module.hpp>
#include <kjit/parameters.hpp>

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

namespace kjit::python {

// A loaded kernel and its parameter table, both libkjit's (KernelHandle::signature: read from
// the PTX once per kernel and kept with it, alive as long as the handle).
struct PyKernel {
  KernelHandle handle;
  const KernelSignature* signature;
};

// The Python handle of kernel `name` of `mod`; `source`, when known, names its parameters.
std::shared_ptr<PyKernel> kernel_of(const Module& mod, std::string_view name, std::string_view source);

// A grid or block: an int or a tuple (or sequence) of 1 to 3 ints. Throws UsageError.
Dim3 to_dim3(const pybind11::handle& h, const char* what);

// Launches `kernel` with `count` Python arguments: on `stream` when given, else on the current
// stream of the tensors' framework there (torch's, CuPy's), else the default stream; on the
// tensors' device. `strided`: the kernel takes non-dense arrays (their strides passed apart).
// Throws ArgumentError for an argument that does not fit, CudaError.
void launch(const PyKernel& kernel, LaunchConfig config, std::optional<std::uintptr_t> stream, bool strided,
            PyObject* const* args, std::size_t count);

// A kjit.Launcher (a new reference, nullptr with a Python error set): k[grid, block] and
// k.launcher(grid, block, ..., strided=).
PyObject* make_launcher(std::shared_ptr<const PyKernel> kernel, const LaunchConfig& config,
                        std::optional<std::uintptr_t> stream, bool strided);

// Adds kjit.Launcher to `m` and makes `kernel_type`'s subscript (k[grid, block, shared_mem,
// stream]) return one.
void register_launcher(pybind11::module_& m, pybind11::handle kernel_type);

}  // namespace kjit::python
