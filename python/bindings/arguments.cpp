#include "arguments.hpp"

#include <kjit/parameters.hpp>
#include <kjit/device.hpp>
#include <kjit/error.hpp>
#include <kjit/stream.hpp>

#include <dlpack/dlpack.h>

#include <cstring>
#include <string>

using namespace pybind11::literals;

namespace kjit::python {
namespace {

// Looked up once: interned names and, once torch or CuPy is imported by the program, what
// kjit reads from them. kjit never imports either.
struct Names {
  PyObject* data_ptr = PyUnicode_InternFromString("data_ptr");
  PyObject* get_device = PyUnicode_InternFromString("get_device");
  PyObject* is_contiguous = PyUnicode_InternFromString("is_contiguous");
  PyObject* cai = PyUnicode_InternFromString("__cuda_array_interface__");
  PyObject* dlpack = PyUnicode_InternFromString("__dlpack__");
  PyObject* dlpack_device = PyUnicode_InternFromString("__dlpack_device__");
  PyObject* data = PyUnicode_InternFromString("data");
  PyObject* device = PyUnicode_InternFromString("device");
  PyObject* id = PyUnicode_InternFromString("id");
  PyObject* cuda_stream = PyUnicode_InternFromString("cuda_stream");
  PyObject* ptr = PyUnicode_InternFromString("ptr");
  PyObject* handle = PyUnicode_InternFromString("handle");
  PyObject* cuda_stream_protocol = PyUnicode_InternFromString("__cuda_stream__");
};
const Names& names() {
  static const Names* n = new Names();  // lives as long as the interpreter's interned strings
  return *n;
}

struct Torch {
  PyTypeObject* tensor = nullptr;     // torch.Tensor
  PyObject* current_stream = nullptr; // torch._C._cuda_getCurrentRawStream(device) -> int
  PyObject* is_initialized = nullptr; // torch.cuda.is_initialized()
  // torch.Tensor's own data_ptr and get_device (method descriptors, found once in its type): a
  // tensor of exactly that type is asked through them, without an attribute lookup per launch.
  // A subclass (a Parameter, a tensor subclass that overrides them) goes through its attributes.
  PyObject* data_ptr = nullptr;
  PyObject* get_device = nullptr;
};
// torch's pieces, once torch is in sys.modules (nullptr before).
const Torch* torch() {
  static Torch t;
  static bool found = false;
  if (found) return &t;
  PyObject* modules = PyImport_GetModuleDict();
  PyObject* torch = PyDict_GetItemString(modules, "torch");  // borrowed
  if (torch == nullptr) return nullptr;
  py::module_ m = py::reinterpret_borrow<py::module_>(torch);
  if (!py::hasattr(m, "Tensor") || !py::hasattr(m, "_C")) return nullptr;  // torch still importing
  t.tensor = reinterpret_cast<PyTypeObject*>(py::object(m.attr("Tensor")).release().ptr());
  py::object c = m.attr("_C");
  if (py::hasattr(c, "_cuda_getCurrentRawStream")) t.current_stream = py::object(c.attr("_cuda_getCurrentRawStream")).release().ptr();
  if (py::hasattr(m, "cuda")) t.is_initialized = py::object(m.attr("cuda").attr("is_initialized")).release().ptr();
  t.data_ptr = _PyType_Lookup(t.tensor, names().data_ptr);  // borrowed from the type, which lives on
  t.get_device = _PyType_Lookup(t.tensor, names().get_device);
  found = true;
  return &t;
}

PyObject* cupy_current_stream() {
  static PyObject* fn = nullptr;
  if (fn) return fn;
  PyObject* cupy = PyDict_GetItemString(PyImport_GetModuleDict(), "cupy");
  if (cupy == nullptr) return nullptr;
  auto fn_attr = py::reinterpret_borrow<py::object>(cupy).attr("cuda").attr("get_current_stream");
  fn = py::object(fn_attr).release().ptr();
  return fn;
}

std::string type_name(PyObject* o) { return Py_TYPE(o)->tp_name; }

std::string device_name(int device) { return device < 0 ? "the host (cpu)" : "cuda:" + std::to_string(device); }

// One tensor argument on `device`: it must be the launch's.
void place(const KernelSignature& s, std::size_t i, Placement& where, int device, const char* what) {
  if (device < 0) {
    s.refuse(i, std::string(what) + " on the host (cpu)", "kernels take device memory; move it with .cuda()");
  }
  if (where.device >= 0 && where.device != device) {
    s.refuse(i, std::string(what) + " on " + device_name(device),
             "the launch runs on " + device_name(where.device) + ", where the earlier tensor arguments are");
  }
  where.device = device;
}

// A call's result as a long long (the call's own reference dropped); throws what Python raised.
long long owned_long(PyObject* r) {
  if (r == nullptr) throw py::error_already_set();
  long long v = PyLong_AsLongLong(r);
  Py_DECREF(r);
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  return v;
}

long long call_long(PyObject* o, PyObject* method) { return owned_long(PyObject_CallMethodNoArgs(o, method)); }

// `descriptor(a)` for a method descriptor of a's exact type: one vectorcall, no lookup.
long long call_descriptor(PyObject* descriptor, PyObject* a) {
  return owned_long(PyObject_Vectorcall(descriptor, &a, 1, nullptr));
}

bool pack_torch(const KernelSignature& s, std::size_t i, PyObject* a, Placement& where, bool strict, void* slot) {
  const Torch* t = torch();
  if (t == nullptr || !PyObject_TypeCheck(a, t->tensor)) return false;
  const Names& n = names();
  const bool exact = Py_TYPE(a) == t->tensor && t->data_ptr != nullptr && t->get_device != nullptr;
  const long long device = exact ? call_descriptor(t->get_device, a) : call_long(a, n.get_device);
  place(s, i, where, static_cast<int>(device), "a torch.Tensor");
  if (strict && !call_long(a, n.is_contiguous)) s.refuse(i, "a non-contiguous torch.Tensor", "strict=True");
  const long long pointer = exact ? call_descriptor(t->data_ptr, a) : call_long(a, n.data_ptr);
  s.pack_pointer(i, static_cast<std::uint64_t>(pointer), slot);
  where.torch = true;
  return true;
}

bool pack_array_interface(const KernelSignature& s, std::size_t i, PyObject* a, Placement& where, bool strict,
                          void* slot) {
  const Names& n = names();
  if (!PyObject_HasAttr(a, n.cai)) return false;
  py::object o = py::reinterpret_borrow<py::object>(a);
  py::object cai_object = o.attr(n.cai);
  if (!PyDict_Check(cai_object.ptr())) {
    s.refuse(i, type_name(a) + " whose __cuda_array_interface__ is no dict", "the interface is a dict (version 3)");
  }
  py::dict cai = cai_object;
  PyObject* data_item = PyDict_GetItemString(cai.ptr(), "data");  // borrowed
  if (data_item == nullptr || !PyTuple_Check(data_item) || PyTuple_GET_SIZE(data_item) < 1) {
    s.refuse(i, type_name(a) + " whose __cuda_array_interface__ has no data (pointer, read_only) pair",
             "the interface's \"data\" is (int, bool)");
  }
  const std::uint64_t address = py::handle(PyTuple_GET_ITEM(data_item, 0)).cast<std::uint64_t>();
  // Version 3's stream: the producer's, which the launch must wait for (None or absent: no wait).
  if (PyObject* stream = PyDict_GetItemString(cai.ptr(), "stream"); stream != nullptr && stream != Py_None) {
    if (!PyLong_Check(stream) || PyLong_AsLongLong(stream) == 0) {
      PyErr_Clear();
      s.refuse(i, type_name(a) + " whose __cuda_array_interface__ stream is " + py::repr(stream).cast<std::string>(),
               "the stream is None, 1 (legacy default), 2 (per-thread default) or a CUstream");
    }
    if (where.producer_count == Placement::k_streamed) {
      s.refuse(i, "a " + std::to_string(Placement::k_streamed + 1) + "th array with a producer stream",
               "a launch waits for at most " + std::to_string(Placement::k_streamed));
    }
    where.producer_stream[where.producer_count++] = py::handle(stream).cast<std::uintptr_t>();
  }
  if (strict && cai.contains("strides") && !cai["strides"].is_none()) {
    s.refuse(i, "a strided array (__cuda_array_interface__ strides)", "strict=True");
  }
  std::string module = py::str(o.get_type().attr("__module__"));
  if (module.rfind("cupy", 0) == 0) {
    place(s, i, where, o.attr(n.device).attr(n.id).cast<int>(), "a cupy array");
    where.cupy = true;
  } else if (PyObject_HasAttr(a, n.dlpack_device)) {
    py::tuple d = o.attr(n.dlpack_device)();
    place(s, i, where, d[0].cast<int>() == kDLCPU ? -1 : d[1].cast<int>(), type_name(a).c_str());
  }
  s.pack_pointer(i, address, slot);
  return true;
}

bool pack_dlpack(const KernelSignature& s, std::size_t i, PyObject* a, Placement& where, bool strict, void* slot) {
  const Names& n = names();
  if (!PyObject_HasAttr(a, n.dlpack) || !PyObject_HasAttr(a, n.dlpack_device)) return false;
  py::object o = py::reinterpret_borrow<py::object>(a);
  py::tuple d = o.attr(n.dlpack_device)();
  int type = d[0].cast<int>();
  int device = type == kDLCUDA || type == kDLCUDAManaged ? d[1].cast<int>() : -1;
  place(s, i, where, device, (type_name(a) + " (DLPack)").c_str());
  // Packed once the launch's stream is known: the producer makes the data ready for that stream.
  if (where.dlpack_count == Placement::k_streamed) {
    s.refuse(i, "a " + std::to_string(Placement::k_streamed + 1) + "th DLPack argument",
             "a launch takes at most " + std::to_string(Placement::k_streamed));
  }
  where.dlpack_index[where.dlpack_count++] = static_cast<std::uint32_t>(i);
  (void)strict;
  (void)slot;
  return true;
}

// DLPack's stream argument for a launch on `stream`: 1 for the legacy default stream (the NULL
// stream and CU_STREAM_LEGACY), 2 for the per-thread one, else the CUstream itself.
std::uintptr_t dlpack_stream(std::uintptr_t stream) { return stream == 0 ? 1 : stream; }

void pack_dlpack_now(const KernelSignature& s, std::size_t i, PyObject* a, std::uintptr_t stream, bool strict,
                     void* slot) {
  const Names& n = names();
  py::object o = py::reinterpret_borrow<py::object>(a);
  py::object capsule;
  try {
    capsule = o.attr(n.dlpack)("stream"_a = dlpack_stream(stream));
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_TypeError)) throw;
    capsule = o.attr(n.dlpack)();  // a producer older than the stream argument
  }
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (managed == nullptr) throw py::error_already_set();
  const DLTensor& t = managed->dl_tensor;
  std::uint64_t address = reinterpret_cast<std::uintptr_t>(t.data) + t.byte_offset;
  bool contiguous = true;
  if (t.strides != nullptr) {
    std::int64_t expected = 1;
    for (int k = t.ndim - 1; k >= 0; --k) {
      if (t.shape[k] != 1 && t.strides[k] != expected) contiguous = false;
      expected *= t.shape[k];
    }
  }
  // The capsule was not consumed: its destructor calls the producer's deleter. The memory stays
  // the producer's array's, which the caller holds for the call.
  if (strict && !contiguous) s.refuse(i, "a non-contiguous DLPack tensor", "strict=True");
  s.pack_pointer(i, address, slot);
}

bool is_numpy_bool(PyObject* a) {
  std::string_view name = Py_TYPE(a)->tp_name;
  return name == "numpy.bool_" || name == "numpy.bool";
}

void pack_one(const KernelSignature& s, std::size_t i, PyObject* a, Placement& where, bool strict, void* slot) {
  if (PyBool_Check(a)) return s.pack_boolean(i, a == Py_True, slot);
  if (PyLong_Check(a)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(a, &overflow);
    if (overflow == 0) {
      if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
      return s.pack_signed(i, v, slot);
    }
    if (overflow > 0) {
      unsigned long long u = PyLong_AsUnsignedLongLong(a);
      if (!PyErr_Occurred()) return s.pack_unsigned(i, u, slot);
      PyErr_Clear();
    }
    s.refuse(i, "int " + py::str(a).cast<std::string>(), "out of range for every integer parameter");
  }
  if (PyFloat_Check(a)) return s.pack_floating(i, PyFloat_AS_DOUBLE(a), slot);
  if (a == Py_None) return s.pack_pointer(i, 0, slot);
  if (pack_torch(s, i, a, where, strict, slot)) return;
  if (pack_array_interface(s, i, a, where, strict, slot)) return;
  if (pack_dlpack(s, i, a, where, strict, slot)) return;
  if (PyBytes_Check(a)) return s.pack_bytes(i, PyBytes_AS_STRING(a), static_cast<std::size_t>(PyBytes_GET_SIZE(a)), slot);
  if (s.parameters()[i].kind == ParameterKind::bytes && PyObject_CheckBuffer(a)) {
    Py_buffer view;
    if (PyObject_GetBuffer(a, &view, PyBUF_CONTIG_RO) != 0) throw py::error_already_set();
    try {
      s.pack_bytes(i, view.buf, static_cast<std::size_t>(view.len), slot);
    } catch (...) {
      PyBuffer_Release(&view);
      throw;
    }
    PyBuffer_Release(&view);
    return;
  }
  if (is_numpy_bool(a)) return s.pack_boolean(i, PyObject_IsTrue(a) == 1, slot);
  if (PyIndex_Check(a)) {  // numpy integers
    py::object as_int = py::reinterpret_steal<py::object>(PyNumber_Index(a));
    if (!as_int) throw py::error_already_set();
    return pack_one(s, i, as_int.ptr(), where, strict, slot);
  }
  if (Py_TYPE(a)->tp_as_number != nullptr && Py_TYPE(a)->tp_as_number->nb_float != nullptr) {  // numpy floats
    double v = PyFloat_AsDouble(a);
    if (v == -1.0 && PyErr_Occurred()) throw py::error_already_set();
    return s.pack_floating(i, v, slot);
  }
  std::string shown = py::repr(a).cast<std::string>();
  if (shown.size() > 40) shown = shown.substr(0, 37) + "...";
  s.refuse(i, type_name(a) + " " + shown, "kjit passes ints, floats, bools, bytes, numpy scalars, None and device "
                                          "arrays (torch, __cuda_array_interface__, DLPack)");
}

std::uintptr_t as_handle(PyObject* o) {
  unsigned long long v = PyLong_AsUnsignedLongLong(o);
  if (PyErr_Occurred()) throw py::error_already_set();
  return static_cast<std::uintptr_t>(v);
}

}  // namespace

Placement pack_arguments(const KernelSignature& s, PyObject* const* args, std::size_t count, unsigned char* buffer,
                         void** pointers, bool strict) {
  s.check_count(count);
  Placement where;
  for (std::size_t i = 0; i < count; ++i) {
    void* slot = buffer + s.offset(i);
    pack_one(s, i, args[i], where, strict, slot);
    pointers[i] = slot;
  }
  return where;
}

void finish_arguments(const KernelSignature& s, PyObject* const* args, Placement& where, std::uintptr_t stream,
                      unsigned char* buffer, bool strict) {
  for (int k = 0; k < where.dlpack_count; ++k) {
    const std::size_t i = where.dlpack_index[k];
    pack_dlpack_now(s, i, args[i], stream, strict, buffer + s.offset(i));
  }
  for (int k = 0; k < where.producer_count; ++k) {
    // 1 names the legacy default stream, which a launch on the NULL stream is on too.
    const std::uintptr_t producer = where.producer_stream[k];
    const std::uintptr_t launch = stream == 0 ? 1 : stream;
    if (producer != launch && where.device >= 0) {
      stream_wait(StreamRef(reinterpret_cast<CUstream_st*>(stream)), StreamRef(reinterpret_cast<CUstream_st*>(producer)),
                  Device::get(where.device));
    }
  }
}

std::optional<std::uintptr_t> stream_handle(const py::handle& stream) {
  if (stream.is_none()) return std::nullopt;
  PyObject* o = stream.ptr();
  if (PyLong_Check(o)) return as_handle(o);
  const Names& n = names();
  if (PyObject_HasAttr(o, n.cuda_stream_protocol)) {  // cuda.core's protocol: __cuda_stream__() -> (version, handle)
    py::object pair = py::reinterpret_borrow<py::object>(o).attr(n.cuda_stream_protocol)();
    if (PyTuple_Check(pair.ptr()) && PyTuple_GET_SIZE(pair.ptr()) == 2) return as_handle(PyTuple_GET_ITEM(pair.ptr(), 1));
    throw UsageError("launching a kernel: stream=" + type_name(o) + ": __cuda_stream__() returned no (version, handle) pair");
  }
  for (PyObject* attr : {n.cuda_stream, n.ptr, n.handle}) {  // torch.cuda.Stream, cupy.cuda.Stream, kjit.Stream
    if (PyObject_HasAttr(o, attr)) {
      py::object v = py::reinterpret_borrow<py::object>(o).attr(attr);
      if (PyLong_Check(v.ptr())) return as_handle(v.ptr());
    }
  }
  throw UsageError("launching a kernel: stream= takes None, an int (a CUstream), an object with __cuda_stream__, a "
                   "kjit.Stream, a torch.cuda.Stream or a cupy.cuda.Stream; given " + type_name(o));
}

std::uintptr_t default_stream(const Placement& where) {
  if (where.torch) {
    const Torch* t = torch();
    if (t != nullptr && t->current_stream != nullptr) {
      PyObject* device = PyLong_FromLong(where.device);
      PyObject* r = PyObject_CallOneArg(t->current_stream, device);
      Py_DECREF(device);
      if (r == nullptr) throw py::error_already_set();
      std::uintptr_t h = as_handle(r);
      Py_DECREF(r);
      return h;
    }
  }
  if (where.cupy) {
    if (PyObject* fn = cupy_current_stream()) {  // CuPy's current stream of the arrays' device
      py::object s = py::reinterpret_borrow<py::object>(fn)(where.device);
      return s.attr(names().ptr).cast<std::uintptr_t>();
    }
  }
  return 0;
}

std::uintptr_t ambient_stream() {
  const Torch* t = torch();
  if (t != nullptr && t->current_stream != nullptr && t->is_initialized != nullptr &&
      py::reinterpret_borrow<py::object>(t->is_initialized)().cast<bool>()) {
    py::object device = py::module_::import("torch").attr("cuda").attr("current_device")();
    return py::reinterpret_borrow<py::object>(t->current_stream)(device).cast<std::uintptr_t>();
  }
  if (PyObject* fn = cupy_current_stream()) {
    return py::reinterpret_borrow<py::object>(fn)().attr(names().ptr).cast<std::uintptr_t>();
  }
  return 0x1;  // CU_STREAM_LEGACY: the default stream as the driver names it
}

}  // namespace kjit::python
