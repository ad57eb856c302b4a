// What runs on a GPU: Kernel (k[grid, block](...) through launcher.cpp, k.launch(...)), Stream,
// GlobalHandle (a module's __device__ and __constant__ variables).
#include <kjit/parameters.hpp>
#include <kjit/kjit.hpp>

#include <pybind11/stl.h>

#include "arguments.hpp"
#include "bindings.hpp"
#include "launcher.hpp"

#include <memory>
#include <string>

using namespace pybind11::literals;

namespace kjit::python {
namespace {

std::string buffer_bytes(const py::buffer& b) {
  py::buffer_info info = b.request();
  if (info.ndim > 0) {
    // Contiguous host memory only: the Python layer makes arrays contiguous first.
    py::ssize_t expected = info.itemsize;
    for (auto k = info.ndim; k-- > 0;) {
      if (info.shape[k] != 1 && info.strides[k] != expected) {
        throw UsageError("copying to a module global: the host array is not contiguous");
      }
      expected *= info.shape[k];
    }
  }
  return std::string(static_cast<const char*>(info.ptr), static_cast<std::size_t>(info.size * info.itemsize));
}

}  // namespace

std::shared_ptr<PyKernel> kernel_of(const Module& mod, std::string_view name, std::string_view source) {
  // The kernel's state and parameter table are libkjit's, kept with the loaded module (one lookup
  // and one PTX read per kernel, whichever Module object asks); this is only their Python handle.
  KernelHandle handle = mod.kernel_handle(name);
  const KernelSignature* signature = &handle.signature(source);
  return std::make_shared<PyKernel>(PyKernel{std::move(handle), signature});
}

void bind_kernels(py::module_& m) {
  py::class_<Stream>(m, "Stream", "A CUDA stream of kjit's own (non-blocking).")
      .def(py::init([](int device) { return std::make_unique<Stream>(Device::get(device)); }), "device"_a = 0)
      .def_property_readonly("handle", [](const Stream& s) { return reinterpret_cast<std::uintptr_t>(s.handle()); })
      .def_property_readonly("device", [](const Stream& s) { return s.device().ordinal(); })
      .def("__cuda_stream__", [](const Stream& s) {
        return py::make_tuple(0, reinterpret_cast<std::uintptr_t>(s.handle()));
      }, "cuda.core's stream protocol: (version 0, the CUstream as an int).")
      .def("synchronize", [](const Stream& s) {
        py::gil_scoped_release unlocked;
        s.synchronize();
      });
  m.def("synchronize", [](int device) {
    py::gil_scoped_release unlocked;
    Device::get(device).synchronize();
  }, "device"_a = 0);

  py::class_<PyKernel, std::shared_ptr<PyKernel>> kernel_type(m, "Kernel",
                                                               "One kernel of a loaded module, its parameters read from its PTX.");
  register_raw(m);
  register_launcher(m, kernel_type);  // k[grid, block] or k[grid, block, shared_mem] or k[grid, block, shared_mem, stream]
  kernel_type
      .def("launch", [](const std::shared_ptr<PyKernel>& k, const py::handle& grid, const py::handle& block,
                        const py::tuple& args, std::size_t shared_mem, const py::handle& stream,
                        const py::handle& cluster, bool cooperative, bool strided) {
             LaunchConfig config;
             config.grid = to_dim3(grid, "grid");
             config.block = to_dim3(block, "block");
             config.shared_mem = shared_mem;
             config.cluster = cluster.is_none() ? Dim3(0, 0, 0) : to_dim3(cluster, "cluster");
             config.cooperative = cooperative;
             const auto n = static_cast<std::size_t>(PyTuple_GET_SIZE(args.ptr()));
             launch(*k, config, stream_handle(stream), strided, n ? &PyTuple_GET_ITEM(args.ptr(), 0) : nullptr, n);
           }, "grid"_a, "block"_a, "args"_a = py::tuple(), "shared_mem"_a = 0, "stream"_a = py::none(),
           "cluster"_a = py::none(), "cooperative"_a = false, "strided"_a = false,
           "Launches with the arguments in args. strided=True: the kernel takes non-contiguous arrays (it is given "
           "their strides), so their layout is not checked.")
      .def("launcher", [](const std::shared_ptr<PyKernel>& k, const py::handle& grid, const py::handle& block,
                          std::size_t shared_mem, const py::handle& stream, bool strided) {
             LaunchConfig config;
             config.grid = to_dim3(grid, "grid");
             config.block = to_dim3(block, "block");
             config.shared_mem = shared_mem;
             PyObject* l = make_launcher(k, config, stream_handle(stream), strided);
             if (l == nullptr) throw py::error_already_set();
             return py::reinterpret_steal<py::object>(l);
           }, "grid"_a, "block"_a, "shared_mem"_a = 0, "stream"_a = py::none(), "strided"_a = false,
           "k[grid, block, shared_mem, stream] with strided=: a kjit.Launcher to call with the arguments.")
      .def("bind", [](const std::shared_ptr<PyKernel>& k, const py::handle& grid, const py::handle& block,
                      const py::handle& stream, std::size_t shared_mem, bool strided) {
             LaunchConfig config;
             config.grid = to_dim3(grid, "grid");
             config.block = to_dim3(block, "block");
             config.shared_mem = shared_mem;
             PyObject* l = make_launcher(k, config, stream_handle(stream), strided);
             if (l == nullptr) throw py::error_already_set();
             return py::reinterpret_steal<py::object>(l);
           }, "grid"_a, "block"_a, py::kw_only(), "stream"_a = py::none(), "shared_mem"_a = 0, "strided"_a = false,
           "The launch bound once: a kjit.Launcher for grid, block, stream (None: the arrays' framework's current "
           "stream at each call) and shared_mem, called with the kernel's arguments as often as needed; each call "
           "checks them as k[grid, block](...) does.")
      .def_property_readonly("name", [](const PyKernel& k) { return k.handle.name(); })
      .def_property_readonly("_identity", [](const PyKernel& k) { return reinterpret_cast<std::uintptr_t>(k.signature); },
                             "The same for every handle to one kernel of one loaded module (its state's).")
      .def_property_readonly("signature", [](const PyKernel& k) { return *k.signature; })
      .def_property_readonly("parameters", [](const PyKernel& k) { return parameters_list(*k.signature); })
      .def("attributes", [](const PyKernel& k) {
        KernelAttributes a = k.handle.attributes();
        return py::dict("registers"_a = a.registers, "static_shared_bytes"_a = a.static_shared_bytes,
                        "max_dynamic_shared_bytes"_a = a.max_dynamic_shared_bytes, "local_bytes"_a = a.local_bytes,
                        "const_bytes"_a = a.const_bytes, "max_threads_per_block"_a = a.max_threads_per_block);
      })
      .def("suggested_block_size", [](const PyKernel& k, std::size_t s) { return k.handle.suggested_block_size(s); },
           "dynamic_shared"_a = 0)
      .def("__repr__", [](const PyKernel& k) { return "<kjit.Kernel " + k.signature->to_string() + ">"; });

  py::class_<GlobalHandle>(m, "GlobalHandle", "A __constant__ or __device__ variable of a loaded module.")
      .def_property_readonly("name", &GlobalHandle::name)
      .def_property_readonly("address", &GlobalHandle::address)
      .def_property_readonly("nbytes", &GlobalHandle::bytes)
      .def("copy_from_host", [](GlobalHandle& g, const py::buffer& b) {
        std::string bytes = buffer_bytes(b);
        py::gil_scoped_release unlocked;
        g.copy_from_host(bytes.data(), bytes.size());
      })
      .def("to_bytes", [](const GlobalHandle& g) {
        std::string out(g.bytes(), '\0');
        {
          py::gil_scoped_release unlocked;
          g.copy_to_host(out.data(), out.size());
        }
        return as_bytes(out);
      });
}

}  // namespace kjit::python
