// What to compile and what came out: Program, CompileOptions, CompileResult, KernelSignature, and
// what kjit compiles with (versions, NVRTC's archs, where the toolkit was found).
#include <kjit/parameters.hpp>
#include <kjit/kjit.hpp>

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "arguments.hpp"
#include "bindings.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <vector>

using namespace pybind11::literals;

namespace kjit::python {

namespace {

std::string fmt_hex(Py_UCS4 c) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%04X", static_cast<unsigned>(c));
  return buffer;
}

// A str argument of kjit.Program as UTF-8; one it cannot be (a lone surrogate) is a UsageError
// naming the argument and where.
std::string utf8(const py::handle& text, const char* what) {
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(text.ptr(), &size);
  if (data == nullptr) {
    PyErr_Clear();
    std::string where;
    const Py_ssize_t n = PyUnicode_GetLength(text.ptr());
    for (Py_ssize_t k = 0; k < n; ++k) {
      const Py_UCS4 c = PyUnicode_READ_CHAR(text.ptr(), k);
      if (c >= 0xD800 && c <= 0xDFFF) {
        where = " (a lone surrogate U+" + fmt_hex(c) + " at character " + std::to_string(k) + ")";
        break;
      }
    }
    throw UsageError(std::string("kjit.Program(name, source): ") + what + " is not valid Unicode" + where +
                     "; CUDA source is UTF-8 text: read a file with kjit.read_program, or pass bytes");
  }
  return std::string(data, static_cast<std::size_t>(size));
}

}  // namespace

py::list parameters_list(const KernelSignature& s) {
  py::list out;
  for (const auto& p : s.parameters()) {
    out.append(py::dict("index"_a = p.index, "name"_a = p.name, "type"_a = p.type, "ptx_type"_a = p.ptx_type,
                        "kind"_a = std::string(to_string(p.kind)), "size"_a = p.size, "align"_a = p.align,
                        "read_only"_a = p.read_only, "source_name"_a = p.source_name,
                        "element"_a = std::string(to_string(p.element)), "element_note"_a = p.element_note));
  }
  return out;
}

void bind_compile(py::module_& m) {
  m.def("version", [] { return std::string(kjit::version()); });
  m.def("nvrtc_version", &nvrtc_version);
  m.def("prepare", [](bool wait) {
    py::gil_scoped_release released;  // the preparation's thread needs no Python
    prepare(wait ? Wait::yes : Wait::no);
  }, "wait"_a = false, "NVRTC made ready on a thread of libkjit's (kjit::prepare): returns at once, or when done.");
  m.def("prepare_as_configured", [] { prepare(RuntimeConfig::from_environment()); },
        "prepare() unless KJIT_PREPARE is off (what `import kjit` calls).");
  m.def("add_nvrtc_fallback", [](const std::string& library) { add_nvrtc_fallback(library); },
        "A libnvrtc to open when none of libkjit's own places has one (pip's CUDA packages').");
  m.def("supported_archs", &supported_archs);
  m.def("driver_available", &driver_available);
  m.def("driver_unavailable_reason", &driver_unavailable_reason);
  m.def("device_count", &device_count);
  m.def("_current_device", [] { return Device::current().ordinal(); },
        "The device a load without device= goes to (the current context's, else 0): what Runtime::load asks.");
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
             return Program(utf8(name, "name"), PyBytes_Check(source.ptr()) ? source.cast<std::string>()
                                                                             : utf8(source, "source"));
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

  // One property a row of the options' table (compile_option_fields()), each set through it: the
  // values, kinds and ranges are C++'s.
  py::class_<CompileOptions> options(m, "CompileOptions");
  options.def(py::init<>());
  for (const CompileOptionField& f : compile_option_fields()) {
    const std::string name(f.name);
    options.def_property(
        name.c_str(), [name](const CompileOptions& o) { return compile_option(o, name); },
        [name](CompileOptions& o, const CompileOptionValue& v) { set_compile_option(o, name, v); },
        std::string(f.doc).c_str());
  }
  m.def("compile_option_fields", [] {
    py::list out;
    for (const CompileOptionField& f : compile_option_fields()) {
      py::list raw;
      for (std::string_view r : f.raw_flags) {
        if (!r.empty()) raw.append(std::string(r));
      }
      out.append(py::dict("name"_a = f.name, "kind"_a = to_string(f.kind), "nvrtc"_a = f.nvrtc,
                          "manifest"_a = f.manifest, "cli"_a = f.cli, "raw_flags"_a = raw,
                          "raw_prefix"_a = f.raw_prefix, "example"_a = f.example, "doc"_a = f.doc, "min"_a = f.min,
                          "max"_a = f.max));
    }
    return out;
  }, "CompileOptions' fields, one dict a field, as C++ describes them (docs/compile-options.md).");

  // dynamic_attr: kjit.compile keeps the program's source on its result (_source), which signature()
  // reads the parameters' names from, as a loaded kernel's signature does.
  py::class_<CompileResult>(m, "CompileResult", "What a compile produced, or what the cache held.", py::dynamic_attr())
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
      .def("signature", [](const py::object& self, std::string_view name) {
             KernelSignature s = KernelSignature::of(self.cast<const CompileResult&>(), name);
             if (py::hasattr(self, "_source")) {
               const py::object source = self.attr("_source");
               if (PyUnicode_Check(source.ptr())) s.read_declaration(source.cast<std::string>());
             }
             return s;
           },
           "kernel"_a, "The kernel's parameters, read from the PTX (no GPU needed), and their names from the "
           "program's source (KernelSignature.read_declaration) when kjit.compile made this result.")
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
             finish_arguments(s, items, where, 0, buffer.data());
             return py::bytes(reinterpret_cast<const char*>(buffer.data()), s.buffer_bytes());
           }, "Checks and packs arguments as a launch would; returns the parameter buffer's bytes.")
      .def("read_declaration", &KernelSignature::read_declaration, "source"_a,
           "Reads the parameters' names (and an extern \"C\" kernel's types) from the kernel's declaration in its "
           "source; False when not found.")
      .def("refuse", [](const KernelSignature& s, std::size_t index, std::string_view given, std::string_view why) {
             if (index >= s.size()) throw py::index_error("parameter " + std::to_string(index) + " of " + s.to_string());
             s.refuse(index, given, why);
           }, "index"_a, "given"_a, "why"_a = "",
           "Raises the ArgumentError a launch raises for argument `index`: `given` says what it was.")
      .def("__str__", &KernelSignature::to_string)
      .def("__repr__", [](const KernelSignature& s) { return "<kjit.KernelSignature " + s.to_string() + ">"; });
}

}  // namespace kjit::python
