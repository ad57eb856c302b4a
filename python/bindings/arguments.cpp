#include "arguments.hpp"

#include <kjit/parameters.hpp>
#include <kjit/device.hpp>
#include <kjit/error.hpp>
#include <kjit/stream.hpp>

#include <dlpack/dlpack.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

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
  PyObject* dtype = PyUnicode_InternFromString("dtype");
  PyObject* shape = PyUnicode_InternFromString("shape");
  PyObject* stride = PyUnicode_InternFromString("stride");
};
const Names& names() {
  static const Names* n = new Names();  // lives as long as the interpreter's interned strings
  return *n;
}

// A framework's dtype objects (torch.float32, numpy's dtype('float32'), ...; each a singleton)
// and the element types they are, compared by identity: no lookup, no allocation.
// Filled once from kjit::element_types(), the one table; no fixed capacity.
struct DtypeTable {
  std::vector<std::pair<PyObject*, ElementType>> rows;
  void add(PyObject* dtype, ElementType element) { rows.emplace_back(dtype, element); }
  // unchecked for a dtype kjit has no element type for (quantized, float4).
  ElementType element_of(PyObject* dtype) const {
    for (const auto& [d, element] : rows) {
      if (d == dtype) return element;
    }
    return ElementType::unchecked;
  }
};

struct Torch {
  PyTypeObject* tensor = nullptr;     // torch.Tensor
  PyObject* current_stream = nullptr; // torch._C._cuda_getCurrentRawStream(device) -> int
  PyObject* is_initialized = nullptr; // torch.cuda.is_initialized()
  // torch.Tensor's own data_ptr and get_device (method descriptors, found once in its type): a
  // tensor of exactly that type is asked through them, without an attribute lookup per launch.
  // A subclass (a Parameter, a tensor subclass that overrides them) goes through its attributes.
  PyObject* data_ptr = nullptr;
  PyObject* get_device = nullptr;
  PyObject* is_contiguous = nullptr;
  PyObject* dtype = nullptr;  // the getset descriptor of Tensor.dtype
  DtypeTable dtypes;          // torch.float32, ...
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
  t.is_contiguous = _PyType_Lookup(t.tensor, names().is_contiguous);
  t.dtype = _PyType_Lookup(t.tensor, names().dtype);
  if (t.dtype != nullptr && Py_TYPE(t.dtype)->tp_descr_get == nullptr) t.dtype = nullptr;
  for (const ElementTypeRow& row : element_types()) {
    const std::string name(row.torch);
    if (!name.empty() && py::hasattr(m, name.c_str())) t.dtypes.add(py::object(m.attr(name.c_str())).release().ptr(), row.type);
  }
  found = true;
  return &t;
}

// CuPy's pieces, once cupy is in sys.modules: cupy.ndarray and the descriptors kjit reads from an
// array of exactly that type (its _c_contiguous, dtype and data, the data's ptr and device, the
// device's id), each a C-level attribute of CuPy's Cython classes, so that a CuPy array is read
// without building its __cuda_array_interface__ dict; numpy's dtype objects and their element types.
struct Cupy {
  PyTypeObject* ndarray = nullptr;
  PyObject* c_contiguous = nullptr;
  PyObject* dtype = nullptr;
  PyObject* data = nullptr;
  PyObject* ptr = nullptr;     // MemoryPointer.ptr
  PyObject* device = nullptr;  // MemoryPointer.device
  PyObject* id = nullptr;      // Device.id
  DtypeTable dtypes;           // numpy's dtype objects
};

// A descriptor of `type` by name, borrowed; nullptr unless it is one that reads an attribute.
PyObject* descriptor(PyTypeObject* type, const char* name) {
  py::str n(name);
  PyObject* d = _PyType_Lookup(type, n.ptr());
  return d != nullptr && Py_TYPE(d)->tp_descr_get != nullptr ? d : nullptr;
}

// `d.__get__(o)`: a new reference; throws what Python raised.
py::object read(PyObject* d, PyObject* o) {
  PyObject* r = Py_TYPE(d)->tp_descr_get(d, o, reinterpret_cast<PyObject*>(Py_TYPE(o)));
  if (r == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(r);
}

// CuPy's pieces once cupy is imported; nullptr before, or when this CuPy's classes are not as
// expected (its arrays then go through __cuda_array_interface__).
const Cupy* cupy() {
  static Cupy c;
  static int state = 0;  // 0: not looked yet, 1: found, 2: not usable
  if (state == 1) return &c;
  if (state == 2) return nullptr;
  PyObject* modules = PyImport_GetModuleDict();
  PyObject* cupy = PyDict_GetItemString(modules, "cupy");
  PyObject* numpy = PyDict_GetItemString(modules, "numpy");
  if (cupy == nullptr || numpy == nullptr) return nullptr;
  try {
    py::module_ m = py::reinterpret_borrow<py::module_>(cupy);
    if (!py::hasattr(m, "ndarray") || !py::hasattr(m, "cuda")) return nullptr;  // still importing
    c.ndarray = reinterpret_cast<PyTypeObject*>(py::object(m.attr("ndarray")).release().ptr());
    c.c_contiguous = descriptor(c.ndarray, "_c_contiguous");
    c.dtype = descriptor(c.ndarray, "dtype");
    c.data = descriptor(c.ndarray, "data");
    py::object memory_pointer = m.attr("cuda").attr("MemoryPointer");
    py::object device = m.attr("cuda").attr("Device");
    c.ptr = descriptor(reinterpret_cast<PyTypeObject*>(memory_pointer.ptr()), "ptr");
    c.device = descriptor(reinterpret_cast<PyTypeObject*>(memory_pointer.ptr()), "device");
    c.id = descriptor(reinterpret_cast<PyTypeObject*>(device.ptr()), "id");
    py::object np_dtype = py::reinterpret_borrow<py::module_>(numpy).attr("dtype");
    for (const ElementTypeRow& row : element_types()) {
      if (!row.numpy.empty()) c.dtypes.add(np_dtype(std::string(row.numpy)).release().ptr(), row.type);
    }
  } catch (const py::error_already_set&) {
    state = 2;
    return nullptr;
  }
  const bool usable = c.c_contiguous && c.dtype && c.data && c.ptr && c.device && c.id;
  state = usable ? 1 : 2;
  return usable ? &c : nullptr;
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

// "(4, 3)" of a sequence of ints (a shape, strides).
std::string shown_tuple(const py::handle& sequence) {
  std::string out = "(";
  for (const auto& v : sequence) out += (out.size() > 1 ? ", " : "") + py::str(v).cast<std::string>();
  return out + (out.size() > 1 && py::len(sequence) == 1 ? ",)" : ")");
}

// A tensor's element type, checked against parameter i (the fast case: one compare).
void check_torch_element(const KernelSignature& s, std::size_t i, PyObject* a, const Torch& t, bool exact) {
  PyObject* dtype = exact && t.dtype != nullptr ? Py_TYPE(t.dtype)->tp_descr_get(t.dtype, a, reinterpret_cast<PyObject*>(t.tensor))
                                                : PyObject_GetAttr(a, names().dtype);
  if (dtype == nullptr) throw py::error_already_set();
  const ElementType element = t.dtypes.element_of(dtype);
  Py_DECREF(dtype);  // torch's dtype objects live as long as torch
  if (s.fits(i, element)) return;
  py::object o = py::reinterpret_borrow<py::object>(a);
  py::tuple shape = o.attr(names().shape);
  const std::int64_t last = shape.empty() ? 0 : shape[shape.size() - 1].cast<std::int64_t>();
  s.check_element(i, element, last, py::str(o.attr(names().dtype)).cast<std::string>() + " tensor");
}

bool pack_torch(const KernelSignature& s, std::size_t i, PyObject* a, Placement& where, Checks checks, void* slot) {
  const Torch* t = torch();
  if (t == nullptr || !PyObject_TypeCheck(a, t->tensor)) return false;
  const Names& n = names();
  const bool exact = Py_TYPE(a) == t->tensor && t->data_ptr != nullptr && t->get_device != nullptr &&
                     t->is_contiguous != nullptr;
  const long long device = exact ? call_descriptor(t->get_device, a) : call_long(a, n.get_device);
  place(s, i, where, static_cast<int>(device), "a torch.Tensor");
  if (checks.element) check_torch_element(s, i, a, *t, exact);
  if (checks.layout && !(exact ? call_descriptor(t->is_contiguous, a) : call_long(a, n.is_contiguous))) {
    py::object o = py::reinterpret_borrow<py::object>(a);
    s.refuse_layout(i, "torch.Tensor", "shape " + shown_tuple(o.attr(n.shape)) + ", strides " +
                                           shown_tuple(o.attr(n.stride)()));
  }
  const long long pointer = exact ? call_descriptor(t->data_ptr, a) : call_long(a, n.data_ptr);
  s.pack_pointer(i, static_cast<std::uint64_t>(pointer), slot);
  where.torch = true;
  return true;
}

// __cuda_array_interface__'s typestr ("<f4", "|u1", "<c8") as an element type (element_types()'s
// typestr column); unchecked for one kjit has none for.
ElementType element_of_typestr(std::string_view t) {
  if (t.size() < 3) return ElementType::unchecked;
  for (const ElementTypeRow& row : element_types()) {
    if (!row.typestr.empty() && t.substr(1) == row.typestr) return row.type;
  }
  return ElementType::unchecked;
}

// DLPack's dtype as an element type (one lane only; element_types()'s DLPack columns); unchecked
// for one kjit has none for.
ElementType element_of_dlpack(const DLDataType& d) {
  if (d.lanes != 1) return ElementType::unchecked;
  for (const ElementTypeRow& row : element_types()) {
    if (row.dlpack_bits != 0 && row.dlpack_code == d.code && row.dlpack_bits == d.bits) return row.type;
  }
  return ElementType::unchecked;
}

// Whether dense row-major strides (in elements or bytes, `unit` each) match `strides`; a
// dimension of extent 1 may have any stride.
template <class Strides>
bool dense(std::size_t ndim, const std::int64_t* shape, const Strides& strides, std::int64_t unit) {
  std::int64_t expected = unit;
  for (std::size_t k = ndim; k-- > 0;) {
    if (shape[k] != 1 && static_cast<std::int64_t>(strides[k]) != expected) return false;
    expected *= shape[k];
  }
  return true;
}

// __dlpack_device__()'s (device type, ordinal), checked: a tuple of two ints.
std::pair<int, int> dlpack_device(const KernelSignature& s, std::size_t i, PyObject* a) {
  py::object d = py::reinterpret_borrow<py::object>(a).attr(names().dlpack_device)();
  PyObject* t = d.ptr();
  if (PyTuple_Check(t) && PyTuple_GET_SIZE(t) == 2 && PyLong_Check(PyTuple_GET_ITEM(t, 0)) &&
      PyLong_Check(PyTuple_GET_ITEM(t, 1))) {
    const long type = PyLong_AsLong(PyTuple_GET_ITEM(t, 0)), ordinal = PyLong_AsLong(PyTuple_GET_ITEM(t, 1));
    if (!PyErr_Occurred() && type >= 0 && type <= 0xffff && ordinal >= 0 && ordinal <= 0xffff) {
      return {static_cast<int>(type), static_cast<int>(ordinal)};
    }
    PyErr_Clear();
  }
  s.refuse(i, type_name(a) + " whose __dlpack_device__() returned " + py::repr(d).cast<std::string>(),
           "DLPack's device is a (device type, device id) pair of ints");
}

// An array interface's typestr and strides, checked against parameter i.
void check_array_interface(const KernelSignature& s, std::size_t i, PyObject* a, const py::dict& cai, Checks checks) {
  PyObject* typestr = PyDict_GetItemString(cai.ptr(), "typestr");  // borrowed
  PyObject* shape = PyDict_GetItemString(cai.ptr(), "shape");
  if (typestr == nullptr || !PyUnicode_Check(typestr) || shape == nullptr || !PyTuple_Check(shape)) {
    s.refuse(i, type_name(a) + " whose __cuda_array_interface__ has no typestr or shape",
             "the interface's \"typestr\" is a str (\"<f4\") and its \"shape\" a tuple of ints");
  }
  std::vector<std::int64_t> extents;  // only on the first launch of an array kind: the interface is a new dict anyway
  try {
    for (const auto& e : py::reinterpret_borrow<py::tuple>(shape)) extents.push_back(e.cast<std::int64_t>());
  } catch (const py::cast_error&) {
    s.refuse(i, type_name(a) + " whose __cuda_array_interface__ shape is " + py::repr(shape).cast<std::string>(),
             "the interface's \"shape\" is a tuple of ints");
  }
  const std::string code = py::reinterpret_borrow<py::str>(typestr).cast<std::string>();
  if (checks.element) {
    const ElementType element = element_of_typestr(code);
    if (!s.fits(i, element)) {
      s.check_element(i, element, extents.empty() ? 0 : extents.back(),
                      type_name(a) + " typestr '" + code + "'");
    }
  }
  PyObject* strides = PyDict_GetItemString(cai.ptr(), "strides");
  if (checks.layout && strides != nullptr && strides != Py_None) {
    std::vector<std::int64_t> steps;
    try {
      for (const auto& e : py::reinterpret_borrow<py::sequence>(strides)) steps.push_back(e.cast<std::int64_t>());
    } catch (const py::cast_error&) {
      s.refuse(i, type_name(a) + " whose __cuda_array_interface__ strides are " + py::repr(strides).cast<std::string>(),
               "the interface's \"strides\" is None or a tuple of ints");
    }
    const std::int64_t item = code.size() > 2 ? std::strtoll(code.c_str() + 2, nullptr, 10) : 1;
    if (steps.size() != extents.size() || !dense(extents.size(), extents.data(), steps, item)) {
      s.refuse_layout(i, type_name(a), "shape " + py::repr(shape).cast<std::string>() + ", strides (bytes) " +
                                           py::repr(strides).cast<std::string>());
    }
  }
}

// A cupy.ndarray of exactly that type, read through CuPy's descriptors (no interface dict).
bool pack_cupy(const KernelSignature& s, std::size_t i, PyObject* a, Placement& where, Checks checks, void* slot) {
  const Cupy* c = cupy();
  if (c == nullptr || Py_TYPE(a) != c->ndarray) return false;
  py::object data = read(c->data, a);
  const int device = read(c->id, read(c->device, data.ptr()).ptr()).cast<int>();
  place(s, i, where, device, "a cupy array");
  if (checks.element) {
    py::object dtype = read(c->dtype, a);
    const ElementType element = c->dtypes.element_of(dtype.ptr());
    if (!s.fits(i, element)) {
      py::tuple shape = py::reinterpret_borrow<py::object>(a).attr(names().shape);
      s.check_element(i, element, shape.empty() ? 0 : shape[shape.size() - 1].cast<std::int64_t>(),
                      "cupy array of " + py::str(dtype).cast<std::string>());
    }
  }
  if (checks.layout && read(c->c_contiguous, a).ptr() != Py_True) {
    py::object o = py::reinterpret_borrow<py::object>(a);
    s.refuse_layout(i, "cupy array", "shape " + shown_tuple(o.attr(names().shape)) + ", strides (bytes) " +
                                         shown_tuple(o.attr("strides")));
  }
  s.pack_pointer(i, read(c->ptr, data.ptr()).cast<std::uint64_t>(), slot);
  where.cupy = true;
  return true;
}

bool pack_array_interface(const KernelSignature& s, std::size_t i, PyObject* a, Placement& where, Checks checks,
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
  PyObject* pointer = PyTuple_GET_ITEM(data_item, 0);
  const unsigned long long address = PyLong_Check(pointer) ? PyLong_AsUnsignedLongLong(pointer) : 0;
  if (!PyLong_Check(pointer) || PyErr_Occurred()) {
    PyErr_Clear();
    s.refuse(i, type_name(a) + " whose __cuda_array_interface__ data pointer is " + py::repr(pointer).cast<std::string>(),
             "the interface's \"data\" is (a non-negative int, bool)");
  }
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
  if (checks.element || checks.layout) check_array_interface(s, i, a, cai, checks);
  std::string module = py::str(o.get_type().attr("__module__"));
  if (module.rfind("cupy", 0) == 0) {
    place(s, i, where, o.attr(n.device).attr(n.id).cast<int>(), "a cupy array");
    where.cupy = true;
  } else if (PyObject_HasAttr(a, n.dlpack_device)) {
    const auto [type, ordinal] = dlpack_device(s, i, a);
    place(s, i, where, type == kDLCPU ? -1 : ordinal, type_name(a).c_str());
  }
  s.pack_pointer(i, address, slot);
  return true;
}

bool pack_dlpack(const KernelSignature& s, std::size_t i, PyObject* a, Placement& where, Checks checks, void* slot) {
  const Names& n = names();
  if (!PyObject_HasAttr(a, n.dlpack) || !PyObject_HasAttr(a, n.dlpack_device)) return false;
  const auto [type, ordinal] = dlpack_device(s, i, a);
  int device = type == kDLCUDA || type == kDLCUDAManaged ? ordinal : -1;
  place(s, i, where, device, (type_name(a) + " (DLPack)").c_str());
  // Packed once the launch's stream is known: the producer makes the data ready for that stream.
  if (where.dlpack_count == Placement::k_streamed) {
    s.refuse(i, "a " + std::to_string(Placement::k_streamed + 1) + "th DLPack argument",
             "a launch takes at most " + std::to_string(Placement::k_streamed));
  }
  where.dlpack_checks[where.dlpack_count] = checks;
  where.dlpack_index[where.dlpack_count++] = static_cast<std::uint32_t>(i);
  (void)slot;
  return true;
}

std::string fmt_dlpack(const std::string& type, const DLDataType& d) {
  return type + " DLPack dtype (code " + std::to_string(d.code) + ", " + std::to_string(d.bits) + " bits, " +
         std::to_string(d.lanes) + " lane" + (d.lanes == 1 ? "" : "s") + ")";
}

// DLPack's stream argument for a launch on `stream`: 1 for the legacy default stream (the NULL
// stream and CU_STREAM_LEGACY), 2 for the per-thread one, else the CUstream itself.
std::uintptr_t dlpack_stream(std::uintptr_t stream) { return stream == 0 ? 1 : stream; }

void pack_dlpack_now(const KernelSignature& s, std::size_t i, PyObject* a, std::uintptr_t stream, Checks checks,
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
  // The capsule was not consumed: its destructor calls the producer's deleter. The memory stays
  // the producer's array's, which the caller holds for the call.
  if (checks.element) {
    const ElementType element = element_of_dlpack(t.dtype);
    if (!s.fits(i, element)) {
      s.check_element(i, element, t.ndim > 0 ? t.shape[t.ndim - 1] : 0,
                      fmt_dlpack(type_name(a), t.dtype));
    }
  }
  if (checks.layout && t.strides != nullptr && !dense(static_cast<std::size_t>(t.ndim), t.shape, t.strides, 1)) {
    std::string shape = "(", strides = "(";
    for (int k = 0; k < t.ndim; ++k) {
      shape += (k ? ", " : "") + std::to_string(t.shape[k]);
      strides += (k ? ", " : "") + std::to_string(t.strides[k]);
    }
    s.refuse_layout(i, type_name(a) + " (DLPack)", "shape " + shape + "), strides " + strides + ")");
  }
  s.pack_pointer(i, address, slot);
}

bool is_numpy_bool(PyObject* a) {
  std::string_view name = Py_TYPE(a)->tp_name;
  return name == "numpy.bool_" || name == "numpy.bool";
}

void pack_one(const KernelSignature& s, std::size_t i, PyObject* a, Placement& where, Checks checks, void* slot) {
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
  if (Py_TYPE(a) == &g_raw_type) {  // kjit.raw(x): its bytes as they are, on the launch's device
    PyObject* inner = reinterpret_cast<RawObject*>(a)->array;
    const Checks none{false, false};
    if (pack_torch(s, i, inner, where, none, slot) || pack_cupy(s, i, inner, where, none, slot) ||
        pack_array_interface(s, i, inner, where, none, slot) ||
        pack_dlpack(s, i, inner, where, none, slot))
      return;
    s.refuse(i, "kjit.raw(" + type_name(inner) + ")", "kjit.raw wraps a device array (torch, "
                                                      "__cuda_array_interface__, DLPack)");
  }
  if (pack_torch(s, i, a, where, checks, slot)) return;
  if (pack_cupy(s, i, a, where, checks, slot)) return;
  if (pack_array_interface(s, i, a, where, checks, slot)) return;
  if (pack_dlpack(s, i, a, where, checks, slot)) return;
  if (PyBytes_Check(a)) return s.pack_bytes(i, PyBytes_AS_STRING(a), static_cast<std::size_t>(PyBytes_GET_SIZE(a)), slot);
  if (s.parameters()[i].kind == ParameterKind::bytes && PyObject_CheckBuffer(a)) {
    Py_buffer view;
    if (PyObject_GetBuffer(a, &view, PyBUF_CONTIG_RO) != 0) {
      PyErr_Clear();
      s.refuse(i, type_name(a) + " that is not contiguous", "a by-value parameter takes contiguous bytes "
                                                             "(bytes(x), or numpy's ascontiguousarray)");
    }
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
    return pack_one(s, i, as_int.ptr(), where, checks, slot);
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
                         void** pointers, bool strided) {
  const Checks checks{true, !strided};
  s.check_count(count);
  Placement where;
  for (std::size_t i = 0; i < count; ++i) {
    void* slot = buffer + s.offset(i);
    pack_one(s, i, args[i], where, checks, slot);
    pointers[i] = slot;
  }
  return where;
}

void finish_arguments(const KernelSignature& s, PyObject* const* args, Placement& where, std::uintptr_t stream,
                      unsigned char* buffer) {
  for (int k = 0; k < where.dlpack_count; ++k) {
    const std::size_t i = where.dlpack_index[k];
    PyObject* a = Py_TYPE(args[i]) == &g_raw_type ? reinterpret_cast<RawObject*>(args[i])->array : args[i];
    pack_dlpack_now(s, i, a, stream, where.dlpack_checks[k], buffer + s.offset(i));
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

PyTypeObject g_raw_type{PyVarObject_HEAD_INIT(nullptr, 0)};

namespace {

PyObject* raw_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* array = nullptr;
  static const char* keywords[] = {"array", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:kjit.raw", const_cast<char**>(keywords), &array)) return nullptr;
  auto* r = reinterpret_cast<RawObject*>(type->tp_alloc(type, 0));
  if (r == nullptr) return nullptr;
  Py_INCREF(array);
  r->array = array;
  return reinterpret_cast<PyObject*>(r);
}

void raw_dealloc(PyObject* self) {
  Py_XDECREF(reinterpret_cast<RawObject*>(self)->array);
  Py_TYPE(self)->tp_free(self);
}

PyObject* raw_repr(PyObject* self) {
  return PyUnicode_FromFormat("kjit.raw(%R)", reinterpret_cast<RawObject*>(self)->array);
}

}  // namespace

void register_raw(py::module_& m) {
  PyTypeObject& t = g_raw_type;
  t.tp_name = "kjit.raw";
  t.tp_doc = "kjit.raw(x): device array x passed to a pointer parameter as its bytes are, whatever its element "
             "type and layout (its device is still checked).";
  t.tp_basicsize = sizeof(RawObject);
  t.tp_flags = Py_TPFLAGS_DEFAULT;
  t.tp_new = raw_new;
  t.tp_dealloc = raw_dealloc;
  t.tp_repr = raw_repr;
  if (PyType_Ready(&t) != 0) throw py::error_already_set();
  Py_INCREF(&t);
  m.add_object("raw", py::handle(reinterpret_cast<PyObject*>(&t)));
}

}  // namespace kjit::python
