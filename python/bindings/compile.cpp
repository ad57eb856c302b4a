// What to compile and what came out: Program, CompileOptions, CompileResult, KernelSignature, and
// what kjit compiles with (versions, NVRTC's archs, where the toolkit was found).
#include <kjit/parameters.hpp>
#include <kjit/kjit.hpp>

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "arguments.hpp"
#include "bindings.hpp"

#include <algorithm>
#include <filesystem>
#include <vector>

using namespace pybind11::literals;

namespace kjit::python {

py::list parameters_list(const KernelSignature& s) {
  py::list out;
  for (const auto& p : s.parameters()) {
    out.append(py::dict("index"_a = p.index, "name"_a = p.name, "type"_a = p.type, "ptx_type"_a = p.ptx_type,
                        "kind"_a = std::string(to_string(p.kind)), "size"_a = p.size, "align"_a = p.align,
                        "read_only"_a = p.read_only, "source_name"_a = p.source_name));
  }
  return out;
}

void bind_compile(py::module_& m) {
  m.def("version", [] { return std::string(kjit::version()); });
  m.def("nvrtc_version", &nvrtc_version);
  m.def("supported_archs", &supported_archs);
  m.def("driver_available", &driver_available);
  m.def("driver_unavailable_reason", &driver_unavailable_reason);
  m.def("device_count", &device_count);
  m.def("toolkit_paths", [] {
    ToolkitPaths t = toolkit_paths();
    return py::dict("nvrtc_library"_a = t.nvrtc_library, "include_dirs"_a = t.include_dirs, "root"_a = t.root());
  }, "Where the loaded libnvrtc is, the include folders NVRTC is given, and the toolkit's folder.");
  m.def("devices", [] {
    py::list out;
    for (int i = 0; driver_available() && i < device_count(); ++i) {
      const Device d = Device::get(i);
      out.append(py::dict("ordinal"_a = i, "name"_a = d.name(), "arch"_a = "sm_" + std::to_string(d.compute_capability()),
                          "memory_bytes"_a = d.total_memory(), "multiprocessors"_a = d.multiprocessor_count()));
    }
    return out;
  }, "Each device as kjit info lists it (none without a driver).");

  py::class_<Program>(m, "Program", "What to compile: a name, CUDA source, headers, name expressions.")
      .def(py::init([](const py::handle& name, const py::handle& source) {
             // Checked here, so that a wrong type says which argument, not pybind11's overload list.
             if (!PyUnicode_Check(name.ptr())) {
               throw py::type_error("kjit.Program(name, source): name takes a str (\"kernel.cu\"); given " +
                                    std::string(Py_TYPE(name.ptr())->tp_name));
             }
             if (!PyUnicode_Check(source.ptr()) && !PyBytes_Check(source.ptr())) {
               throw py::type_error("kjit.Program(name, source): source takes a str (the CUDA source); given " +
                                    std::string(Py_TYPE(source.ptr())->tp_name));
             }
             return Program(name.cast<std::string>(), source.cast<std::string>());
           }), "name"_a, "source"_a)
      .def("header", [](Program& p, std::string name, std::string content) -> Program& {
             return p.header(std::move(name), std::move(content)); }, "name"_a, "content"_a,
           py::return_value_policy::reference_internal, "An in-memory header reachable by #include \"name\".")
      .def("instantiate", [](Program& p, std::string e) -> Program& { return p.instantiate(std::move(e)); },
           "name_expression"_a, py::return_value_policy::reference_internal,
           "A name expression NVRTC instantiates (\"scale<float>\").")
      .def("directory", [](Program& p, std::filesystem::path d) -> Program& { return p.directory(std::move(d)); },
           py::return_value_policy::reference_internal)
      .def_property_readonly("name", &Program::name)
      .def_property_readonly("source", [](const Program& p) { return as_text(p.source()); })
      .def_property_readonly("name_expressions", &Program::name_expressions)
      .def("__repr__", [](const Program& p) { return "<kjit.Program " + p.name() + ">"; });
  m.def("read_program", &read_program, "file"_a);

  py::class_<CompileOptions>(m, "CompileOptions")
      .def(py::init<>())
      .def_property("arch", [](const CompileOptions& o) { return o.arch.str(); },
                    [](CompileOptions& o, const std::string& a) { o.arch = Arch::parse(a); })
      .def_readwrite("std", &CompileOptions::std)
      .def_readwrite("defines", &CompileOptions::defines)
      .def_readwrite("include_dirs", &CompileOptions::include_dirs)
      .def_readwrite("fast_math", &CompileOptions::fast_math)
      .def_readwrite("line_info", &CompileOptions::line_info)
      .def_readwrite("device_debug", &CompileOptions::device_debug)
      .def_readwrite("max_registers", &CompileOptions::max_registers)
      .def_readwrite("flags", &CompileOptions::flags);

  py::class_<CompileResult>(m, "CompileResult", "What a compile produced, or what the cache held.")
      .def_readonly("program_name", &CompileResult::program_name)
      .def_property_readonly("arch", [](const CompileResult& r) { return r.arch.str(); })
      .def_readonly("options", &CompileResult::options)
      .def_property_readonly("ptx", [](const CompileResult& r) { return as_text(r.ptx); })
      .def_property_readonly("cubin", [](const CompileResult& r) { return as_bytes(r.cubin); })
      .def_property_readonly("ltoir", [](const CompileResult& r) { return as_bytes(r.ltoir); })
      .def_property_readonly("log", [](const CompileResult& r) { return as_text(r.log); })
      .def_property_readonly("lowered_names", [](const CompileResult& r) {
        py::dict d;
        for (const auto& [e, n] : r.lowered_names) d[py::str(e)] = n;
        return d;
      })
      .def_readonly("key", &CompileResult::key)
      .def_property_readonly("outcome", [](const CompileResult& r) { return std::string(to_string(r.outcome)); })
      .def_readonly("compile_ms", &CompileResult::compile_ms)
      .def("signature", [](const CompileResult& r, std::string_view name) { return KernelSignature::of(r, name); },
           "kernel"_a, "The kernel's parameters, read from the PTX (no GPU needed).")
      .def("__repr__", [](const CompileResult& r) {
        return "<kjit.CompileResult " + r.program_name + " " + r.arch.str() + " " + std::string(to_string(r.outcome)) +
               " key=" + r.key + ">";
      });

  py::class_<KernelSignature>(m, "KernelSignature")
      .def_property_readonly("kernel", &KernelSignature::kernel)
      .def_property_readonly("symbol", &KernelSignature::symbol)
      .def_property_readonly("parameters", &parameters_list)
      .def("pack", [](const KernelSignature& s, py::args args) {
             std::vector<unsigned char> buffer(s.buffer_bytes() + 16);
             std::vector<void*> pointers(std::max<std::size_t>(args.size(), 1));
             PyObject* const* items = args.size() ? &PyTuple_GET_ITEM(args.ptr(), 0) : nullptr;
             Placement where = pack_arguments(s, items, args.size(), buffer.data(), pointers.data(), false);
             where.producer_count = 0;  // no launch: nothing waits
             finish_arguments(s, items, where, 0, buffer.data(), false);
             return py::bytes(reinterpret_cast<const char*>(buffer.data()), s.buffer_bytes());
           }, "Checks and packs arguments as a launch would; returns the parameter buffer's bytes.")
      .def("name_parameters", &KernelSignature::name_parameters, "source"_a,
           "Reads the parameters' names from the kernel's declaration in its source; False when not found.")
      .def("__str__", &KernelSignature::to_string)
      .def("__repr__", [](const KernelSignature& s) { return "<kjit.KernelSignature " + s.to_string() + ">"; });
}

}  // namespace kjit::python
