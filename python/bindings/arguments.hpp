// Python arguments to a kernel launch: tensors (torch's fast path, __cuda_array_interface__,
// DLPack), Python and numpy scalars and bytes, converted and handed to KernelSignature's checked
// packers; the stream a launch runs on (explicit, torch's or CuPy's current, or the default).
// Conversion only: what fits which parameter is decided by kjit::KernelSignature.
#pragma once

#include <kjit/kernel.hpp>
#include <kjit/parameters.hpp>

#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>

namespace kjit::python {

namespace py = pybind11;

// What a device array argument is checked for beyond its device: its element type against the
// parameter's (ElementType), and a dense layout. kjit.raw(x) turns both off for x; strided=True
// on a launch turns the layout check off for every array.
struct Checks {
  bool element = true;
  bool layout = true;
};

// kjit.raw(x): a device array passed as its bytes are (the deliberate reinterpretation of a
// uint8 buffer as float*); its device is still checked.
struct RawObject {
  PyObject_HEAD
  PyObject* array;
};
extern PyTypeObject g_raw_type;
void register_raw(py::module_& m);

// What the arguments of one launch said about where it runs.
struct Placement {
  int device = -1;         // the tensors' CUDA device; -1: no tensor
  bool torch = false;      // a torch tensor was among them
  bool cupy = false;       // a CuPy array was among them
  // Arguments that name a stream of their producer's, finished once the launch's stream is
  // known (finish_arguments): DLPack objects, whose __dlpack__(stream=) is called with it, and
  // the `stream` of a __cuda_array_interface__, which the launch waits for. Fixed arrays: the
  // launch allocates nothing (more than k_streamed are refused).
  static constexpr int k_streamed = 16;
  int dlpack_count = 0;
  std::uint32_t dlpack_index[k_streamed];
  Checks dlpack_checks[k_streamed];
  int producer_count = 0;
  std::uintptr_t producer_stream[k_streamed];
};

// Packs `count` arguments into `buffer` (signature.buffer_bytes() bytes) and `pointers` (one per
// parameter), all but the DLPack ones (finish_arguments). Throws kjit::ArgumentError (a Python
// TypeError) for an argument that does not fit: a scalar out of range, a device array on another
// device, of another element type or (unless `strided`) not dense.
Placement pack_arguments(const KernelSignature& signature, PyObject* const* args, std::size_t count,
                         unsigned char* buffer, void** pointers, bool strided);
// Once the launch's stream is chosen: packs the DLPack arguments (their producers make the data
// ready for `stream`) and makes `stream` wait for each __cuda_array_interface__ producer's stream.
void finish_arguments(const KernelSignature& signature, PyObject* const* args, Placement& placement,
                      std::uintptr_t stream, unsigned char* buffer);

// A stream given as stream= (None, an int handle, a kjit.Stream, a torch.cuda.Stream, a
// cupy.cuda.Stream): the raw handle; nullopt for None.
std::optional<std::uintptr_t> stream_handle(const py::handle& stream);
// The stream a launch without stream= runs on: torch's current stream of the tensors' device when
// a torch tensor was given, else CuPy's current stream for a CuPy array, else the default stream.
std::uintptr_t default_stream(const Placement& placement);
// The stream kjit.bench times on when none is given: torch's current one when torch is loaded and
// initialized, else CuPy's, else the legacy default stream.
std::uintptr_t ambient_stream();

}  // namespace kjit::python
