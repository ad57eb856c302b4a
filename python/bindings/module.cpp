// kjit._kjit: the Python binding of libkjit's public API (include/kjit). It converts between
// Python and C++ and holds no logic of its own: what to compile, cache, check and launch is
// libkjit's. The pure-Python layer (python/src/kjit/__init__.py) gives it Python's shapes.
#include <kjit/kjit.hpp>
#include <kjit/tools/install.hpp>

#include "bindings.hpp"
#include "exceptions.hpp"

namespace kjit::python {

py::bytes as_bytes(const std::string& s) { return py::bytes(s.data(), s.size()); }

py::str as_text(std::string_view s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
  if (o == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

}  // namespace kjit::python

PYBIND11_MODULE(_kjit, m) {
  m.doc() = "kjit's C++ library (libkjit), bound for Python; use the package kjit.";
  kjit::install_tools();  // KJIT_DUMP_DIR's dumps and KJIT_TUNE_METRICS's figures (libkjit_tools)
  using namespace kjit::python;
  register_exceptions(m);
  bind_compile(m);
  bind_kernels(m);
  bind_runtime(m);
  bind_tools(m);
  bind_warm(m);
}
