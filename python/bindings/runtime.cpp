// The request path: Runtime (configured from C++'s one option table, RuntimeConfig::options),
// the Module a load gives, Link, load_inline.
#include <kjit/kjit.hpp>

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "bindings.hpp"
#include "launcher.hpp"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using namespace pybind11::literals;

namespace kjit::python {
namespace {

// A keyword's value as the text RuntimeConfig::set reads: bools as 1/0, numbers as written,
// str and os.PathLike as they are.
std::string option_text(std::string_view name, const py::handle& value) {
  PyObject* o = value.ptr();
  if (PyBool_Check(o)) return o == Py_True ? "1" : "0";
  if (PyLong_Check(o) || PyFloat_Check(o)) return py::str(value).cast<std::string>();
  if (PyUnicode_Check(o)) return value.cast<std::string>();
  if (PyObject_HasAttrString(o, "__fspath__")) {
    py::object path = py::module_::import("os").attr("fspath")(value);
    if (PyUnicode_Check(path.ptr())) return path.cast<std::string>();
  }
  throw py::type_error("kjit.Runtime(" + std::string(name) + "=...): takes a str, an int, a float, a bool or a "
                       "path; given " + std::string(Py_TYPE(o)->tp_name));
}

}  // namespace

// The keywords of kjit.Runtime(...), read in the table's order (so cache_required, after
// cache_dir there, wins over what naming a folder implies).
RuntimeConfig runtime_config(const py::kwargs& kw) {
  RuntimeConfig c = RuntimeConfig::from_environment();
  for (const auto& option : RuntimeConfig::options()) {
    py::str key(std::string(option.name));
    if (!kw.contains(key)) continue;
    py::handle value = kw[key];
    if (!value.is_none()) c.set(option.name, option_text(option.name, value));
  }
  for (auto [key, value] : kw) {
    std::string name = py::str(key).cast<std::string>();
    bool known = false;
    for (const auto& option : RuntimeConfig::options()) known = known || option.name == name;
    if (!known) c.set(name, "");  // throws: no such option, with the ones there are
  }
  return c;
}

namespace {

py::dict stats_dict(const RuntimeStats& s) {
  py::dict out;
  for_each_counter(s, [&](const char* name, std::uint64_t value) { out[name] = value; });
  return out;
}

std::optional<Device> device_of(const py::object& device) {
  if (device.is_none()) return std::nullopt;
  return Device::get(device.cast<int>());
}

}  // namespace

void bind_runtime(py::module_& m) {
  m.def("runtime_options", [] {
    py::list out;
    for (const auto& o : RuntimeConfig::options()) {
      out.append(py::dict("name"_a = std::string(o.name), "variable"_a = std::string(o.variable),
                          "doc"_a = std::string(o.doc)));
    }
    return out;
  }, "kjit.Runtime's keywords: C++'s RuntimeConfig fields, each with the KJIT_* variable it mirrors.");

  py::class_<Module>(m, "Module", "A compiled program loaded for a device.")
      .def("kernel", [](const Module& mod, std::string_view name, std::string_view source) {
        return kernel_of(mod, name, source);
      }, "name"_a, "source"_a = "")
      .def("global_", [](const Module& mod, std::string_view name) { return mod.global_handle(name); }, "name"_a)
      .def_property_readonly("kernel_names", &Module::kernel_names)
      .def_property_readonly("global_names", &Module::global_names)
      .def("has_kernel", &Module::has_kernel)
      .def_property_readonly("compile_result", &Module::compile_result)
      .def_property_readonly("outcome", [](const Module& mod) { return std::string(to_string(mod.outcome())); })
      .def_property_readonly("device", [](const Module& mod) { return mod.device().ordinal(); });

  py::class_<Link>(m, "Link", "Programs and prebuilt device code linked with nvJitLink.")
      .def(py::init<std::string>(), "name"_a)
      .def("add", [](Link& l, Program p) -> Link& { return l.add(std::move(p)); }, py::return_value_policy::reference_internal)
      .def("add_file", [](Link& l, std::filesystem::path f) -> Link& { return l.add_file(f); },
           py::return_value_policy::reference_internal)
      .def("lto", [](Link& l, bool on) -> Link& { return l.lto(on); }, "on"_a = true,
           py::return_value_policy::reference_internal)
      .def("option", [](Link& l, std::string o) -> Link& { return l.option(std::move(o)); },
           py::return_value_policy::reference_internal)
      .def_property_readonly("name", &Link::name);

  py::class_<Runtime, std::shared_ptr<Runtime>>(m, "Runtime", "The request path: registry, cache, NVRTC.")
      .def(py::init([](const py::kwargs& kw) { return std::make_shared<Runtime>(runtime_config(kw)); }))
      .def_static("global_", [] { return std::shared_ptr<Runtime>(&Runtime::global(), [](Runtime*) {}); })
      .def("compile", [](Runtime& rt, const Program& p, const CompileOptions& o) {
        py::gil_scoped_release unlocked;
        return rt.compile(p, o);
      }, "program"_a, "options"_a)
      .def("load", [](Runtime& rt, const Program& p, const CompileOptions& o, const py::object& device) {
        auto d = device_of(device);
        py::gil_scoped_release unlocked;
        return rt.load(p, o, d);
      }, "program"_a, "options"_a, "device"_a = py::none())
      .def("load_result", [](Runtime& rt, CompileResult r, const py::object& device) {
        auto d = device_of(device);
        py::gil_scoped_release unlocked;
        return rt.load(std::move(r), d);
      }, "result"_a, "device"_a = py::none())
      .def("link", [](Runtime& rt, const Link& l, const CompileOptions& o) {
        py::gil_scoped_release unlocked;
        return rt.link(l, o);
      }, "link"_a, "options"_a)
      .def("load_link", [](Runtime& rt, const Link& l, const CompileOptions& o, const py::object& device) {
        auto d = device_of(device);
        py::gil_scoped_release unlocked;
        return rt.load(l, o, d);
      }, "link"_a, "options"_a, "device"_a = py::none())
      .def("explain", [](Runtime& rt, const Program& p, const CompileOptions& o) {
        auto e = rt.explain(p, o);
        return py::make_tuple(e.key, e.fields);
      })
      .def_property_readonly("cache_dir", &Runtime::cache_dir)
      .def("stats", [](const Runtime& rt) { return stats_dict(rt.stats()); })
      .def("flush_stats", &Runtime::flush_stats);

  m.def("load_inline", [](std::string name, std::string sources, std::vector<std::string> functions,
                          std::vector<std::string> flags, std::filesystem::path build_directory, bool verbose) {
    LoadInlineOptions o{std::move(name), std::move(sources), std::move(functions), std::move(flags),
                        std::move(build_directory), verbose};
    py::gil_scoped_release unlocked;
    return load_inline(o);
  });
}

}  // namespace kjit::python
