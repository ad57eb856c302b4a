#include "launcher.hpp"

#include "arguments.hpp"
#include "exceptions.hpp"

#include <kjit/error.hpp>

#include <pybind11/stl.h>

#include <cstddef>
#include <new>
#include <string>
#include <vector>

namespace py = pybind11;

namespace kjit::python {
namespace {

// A kernel with its launch configuration: what k[grid, block] returns.
struct LauncherObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  std::shared_ptr<const PyKernel> kernel;
  LaunchConfig config;
  std::optional<std::uintptr_t> stream;  // k[grid, block, shared_mem, stream]
  bool strided;                          // k.launcher(..., strided=True)
};

PyTypeObject g_launcher_type{PyVarObject_HEAD_INIT(nullptr, 0)};

// The GIL released while the driver enqueues.
struct Unlocked {
  PyThreadState* state = PyEval_SaveThread();
  ~Unlocked() { PyEval_RestoreThread(state); }
};

PyObject* launcher_call(PyObject* self, PyObject* const* args, std::size_t nargsf, PyObject* kwnames) noexcept {
  auto* l = reinterpret_cast<LauncherObject*>(self);
  if (kwnames != nullptr && PyTuple_GET_SIZE(kwnames) > 0) {
    PyErr_SetString(PyExc_TypeError, "a kernel launch takes the kernel's arguments by position");
    return nullptr;
  }
  try {
    launch(*l->kernel, l->config, l->stream, l->strided, args, static_cast<std::size_t>(PyVectorcall_NARGS(nargsf)));
  } catch (...) {
    set_python_error(std::current_exception());
    return nullptr;
  }
  Py_RETURN_NONE;
}

void launcher_dealloc(PyObject* self) {
  auto* l = reinterpret_cast<LauncherObject*>(self);
  l->kernel.~shared_ptr();
  l->stream.~optional();
  PyObject_Free(self);
}

PyObject* launcher_repr(PyObject* self) {
  auto* l = reinterpret_cast<LauncherObject*>(self);
  const Dim3 g = l->config.grid, b = l->config.block;
  std::string s = "<kjit.Launcher " + l->kernel->handle.name() + " grid=(" + std::to_string(g.x) + ", " +
                  std::to_string(g.y) + ", " + std::to_string(g.z) + ") block=(" + std::to_string(b.x) + ", " +
                  std::to_string(b.y) + ", " + std::to_string(b.z) + ")>";
  return PyUnicode_FromString(s.c_str());
}

// k[grid, block], k[grid, block, shared_mem], k[grid, block, shared_mem, stream].
PyObject* kernel_subscript(PyObject* self, PyObject* key) noexcept {
  try {
    auto kernel = py::cast<std::shared_ptr<PyKernel>>(py::handle(self));
    const Py_ssize_t n = PyTuple_Check(key) ? PyTuple_GET_SIZE(key) : 0;
    if (n < 2 || n > 4) {
      throw UsageError("launching kernel " + kernel->handle.name() + ": k[grid, block] (optionally shared_mem, "
                       "stream) takes 2 to 4 items; given " + std::to_string(PyTuple_Check(key) ? n : 1));
    }
    LaunchConfig config;
    config.grid = to_dim3(PyTuple_GET_ITEM(key, 0), "grid");
    config.block = to_dim3(PyTuple_GET_ITEM(key, 1), "block");
    if (n > 2) config.shared_mem = py::handle(PyTuple_GET_ITEM(key, 2)).cast<std::size_t>();
    std::optional<std::uintptr_t> stream;
    if (n > 3) stream = stream_handle(PyTuple_GET_ITEM(key, 3));
    PyObject* l = make_launcher(std::move(kernel), config, stream, false);
    if (l == nullptr) return nullptr;
    return l;
  } catch (...) {
    set_python_error(std::current_exception());
    return nullptr;
  }
}

}  // namespace

PyObject* make_launcher(std::shared_ptr<const PyKernel> kernel, const LaunchConfig& config,
                        std::optional<std::uintptr_t> stream, bool strided) {
  auto* l = PyObject_New(LauncherObject, &g_launcher_type);
  if (l == nullptr) return nullptr;
  l->vectorcall = launcher_call;
  new (&l->kernel) std::shared_ptr<const PyKernel>(std::move(kernel));
  new (&l->config) LaunchConfig(config);
  new (&l->stream) std::optional<std::uintptr_t>(stream);
  l->strided = strided;
  return reinterpret_cast<PyObject*>(l);
}

Dim3 to_dim3(const py::handle& h, const char* what) {
  PyObject* o = h.ptr();
  if (PyLong_Check(o)) return Dim3(h.cast<unsigned>());
  if (PyTuple_Check(o) && PyTuple_GET_SIZE(o) >= 1 && PyTuple_GET_SIZE(o) <= 3) {  // the usual (x, y)
    unsigned v[3] = {1, 1, 1};
    bool ints = true;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); ++i) {
      PyObject* e = PyTuple_GET_ITEM(o, i);
      unsigned long x = PyLong_Check(e) ? PyLong_AsUnsignedLong(e) : 0;
      if (!PyLong_Check(e) || PyErr_Occurred() || x > 0xffffffffUL) {
        PyErr_Clear();
        ints = false;
        break;
      }
      v[i] = static_cast<unsigned>(x);
    }
    if (ints) return Dim3(v[0], v[1], v[2]);
  }
  if (py::isinstance<py::sequence>(h)) {
    try {
      auto v = h.cast<std::vector<unsigned>>();
      if (!v.empty() && v.size() <= 3) return Dim3(v[0], v.size() > 1 ? v[1] : 1, v.size() > 2 ? v[2] : 1);
    } catch (const py::cast_error&) {  // a negative or a non-int: said below
    }
  }
  throw UsageError(std::string("launching a kernel: ") + what + " takes an int or a tuple of 1 to 3 ints; given " +
                   py::repr(h).cast<std::string>());
}

void launch(const PyKernel& k, LaunchConfig config, std::optional<std::uintptr_t> stream, bool strided,
            PyObject* const* args, std::size_t count) {
  constexpr std::size_t k_inline = 1024;
  alignas(16) unsigned char inline_buffer[k_inline];
  void* inline_pointers[128];
  std::unique_ptr<unsigned char[]> heap_buffer;
  std::unique_ptr<void*[]> heap_pointers;
  unsigned char* buffer = inline_buffer;
  void** pointers = inline_pointers;
  if (k.signature->buffer_bytes() > k_inline || count > 128) {  // huge structs or lists: rare
    heap_buffer.reset(new unsigned char[k.signature->buffer_bytes() + 16]);
    heap_pointers.reset(new void*[std::max<std::size_t>(count, 1)]);
    buffer = heap_buffer.get();
    pointers = heap_pointers.get();
  }
  Placement where = pack_arguments(*k.signature, args, count, buffer, pointers, strided);
  const std::uintptr_t on = stream ? *stream : default_stream(where);
  if (where.dlpack_count != 0 || where.producer_count != 0) finish_arguments(*k.signature, args, where, on, buffer);
  config.stream = StreamRef(reinterpret_cast<CUstream_st*>(on));
  config.device = where.device;  // libkjit runs the launch there and restores the caller's context
  // The GIL is released for the driver: an enqueue blocks when the launch queue is full or a
  // tool serializes launches (compute-sanitizer), and a thread that needs the GIL to let it go on
  // (a host callback, a second launching thread under the sanitizer) must not wait on this one.
  // Holding it instead saved ~0.3-0.6 us a launch and stalled two launching threads under memcheck.
  Unlocked unlocked;
  k.handle.launch_raw(config, count ? pointers : nullptr);
}

void register_launcher(py::module_& m, py::handle kernel_type) {
  PyTypeObject& t = g_launcher_type;
  t.tp_name = "kjit.Launcher";
  t.tp_doc = "A kernel with its launch configuration (k[grid, block]): call it with the kernel's arguments.";
  t.tp_basicsize = sizeof(LauncherObject);
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
  t.tp_vectorcall_offset = offsetof(LauncherObject, vectorcall);
  t.tp_call = PyVectorcall_Call;
  t.tp_dealloc = launcher_dealloc;
  t.tp_repr = launcher_repr;
  if (PyType_Ready(&t) != 0) throw py::error_already_set();
  Py_INCREF(&t);
  m.add_object("Launcher", py::handle(reinterpret_cast<PyObject*>(&t)));
  // The subscript slot itself: k[grid, block] is then one C call, not pybind11's __getitem__.
  auto* kernel = reinterpret_cast<PyTypeObject*>(kernel_type.ptr());
  kernel->tp_as_mapping->mp_subscript = kernel_subscript;
  PyType_Modified(kernel);
}

}  // namespace kjit::python
