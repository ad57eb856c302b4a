#include "exceptions.hpp"

#include "bindings.hpp"

#include <kjit/error.hpp>

#include <pybind11/stl.h>

#include <string>

namespace py = pybind11;

namespace kjit::python {
namespace {

struct Exceptions {
  PyObject* error;
  PyObject* cuda;
  PyObject* driver_not_found;
  PyObject* nvrtc;
  PyObject* compile;
  PyObject* link;
  PyObject* usage;
  PyObject* argument;
  PyObject* unavailable;
  PyObject* io;
};
Exceptions g_exceptions{};

PyObject* new_exception(py::module_& m, const char* name, PyObject* bases, const char* doc) {
  std::string full = std::string("kjit.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(full.c_str(), doc, bases, nullptr);
  if (type == nullptr) throw py::error_already_set();
  m.add_object(name, py::reinterpret_borrow<py::object>(type));
  return type;
}

void raise(PyObject* type, const std::exception& e, std::initializer_list<std::pair<const char*, py::object>> attrs) {
  py::object instance = py::reinterpret_borrow<py::object>(type)(as_text(e.what()));
  for (const auto& [name, value] : attrs) instance.attr(name) = value;
  PyErr_SetObject(type, instance.ptr());
}

// The Python error of a kjit exception; false (nothing set) for any other exception.
bool set_kjit_error(std::exception_ptr p) {
  if (!p) return false;
  try {
    std::rethrow_exception(p);
  } catch (const CompileError& e) {
    py::list options;
    for (const auto& o : e.options()) options.append(as_text(o));
    raise(g_exceptions.compile, e, {{"log", as_text(e.log())}, {"program", as_text(e.program())},
                                    {"options", options}, {"excerpt", as_text(e.excerpt())}});
  } catch (const LinkError& e) {
    raise(g_exceptions.link, e, {{"log", as_text(e.log())}, {"inputs", py::cast(e.inputs())}});
  } catch (const CudaError& e) {
    raise(g_exceptions.cuda, e, {{"result", py::int_(e.result())}, {"result_name", py::str(e.result_name())},
                                 {"call", py::str(e.call())}});
  } catch (const ArgumentError& e) {
    raise(g_exceptions.argument, e, {{"log", as_text(e.log())}});
  } catch (const UsageError& e) {
    raise(g_exceptions.usage, e, {{"log", as_text(e.log())}});
  } catch (const DriverNotFoundError& e) {
    raise(g_exceptions.driver_not_found, e, {});
  } catch (const NvrtcError& e) {
    raise(g_exceptions.nvrtc, e, {{"result", py::int_(e.result())}});
  } catch (const UnavailableError& e) {
    raise(g_exceptions.unavailable, e, {});
  } catch (const IoError& e) {
    raise(g_exceptions.io, e, {});
  } catch (const Error& e) {
    raise(g_exceptions.error, e, {});
  } catch (...) {
    return false;  // not kjit's
  }
  return true;
}

}  // namespace

void register_exceptions(py::module_& m) {
  auto& x = g_exceptions;
  x.error = new_exception(m, "Error", PyExc_RuntimeError, "Base of every error kjit raises.");
  x.cuda = new_exception(m, "CudaError", x.error, "A CUDA driver call failed (.result, .result_name, .call).");
  x.driver_not_found = new_exception(m, "DriverNotFoundError", x.error,
                                     "No usable CUDA driver: compile-only features still work.");
  x.nvrtc = new_exception(m, "NvrtcError", x.error, "An NVRTC API call (not the compile itself) failed.");
  x.compile = new_exception(m, "CompileError", x.error,
                            "NVRTC rejected the program (.log, .program, .options, .excerpt).");
  x.link = new_exception(m, "LinkError", x.error, "nvJitLink refused a link (.log, .inputs).");
  py::tuple usage_bases = py::make_tuple(py::handle(x.error), py::handle(PyExc_ValueError));
  x.usage = new_exception(m, "UsageError", usage_bases.ptr(),
                          "Bad input: an unknown kernel, a bad option, a launch over the device's limits (.log).");
  py::tuple argument_bases = py::make_tuple(py::handle(x.usage), py::handle(PyExc_TypeError));
  x.argument = new_exception(m, "ArgumentError", argument_bases.ptr(),
                             "A kernel argument that does not fit its parameter (also a TypeError).");
  x.unavailable = new_exception(m, "UnavailableError", x.error, "A tool kjit needs is not installed (nvdisasm).");
  x.io = new_exception(m, "IoError", x.error, "Reading a source or writing an output file failed.");

  py::register_exception_translator([](std::exception_ptr p) {
    if (!set_kjit_error(p)) std::rethrow_exception(p);  // pybind11's own translators take the rest
  });
}

void set_python_error(std::exception_ptr p) noexcept {
  try {
    if (set_kjit_error(p)) return;
    std::rethrow_exception(p);
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const py::builtin_exception& e) {
    e.set_error();
  } catch (const std::exception& e) {
    PyErr_SetObject(PyExc_RuntimeError, as_text(e.what()).ptr());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "kjit: an unknown C++ exception");
  }
}

}  // namespace kjit::python
