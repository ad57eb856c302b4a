// The tools: what the compiler made (diff, resources, SASS), timing (bench) and the profiler.
#include <kjit/kjit.hpp>
#include <kjit/bench.hpp>
#include <kjit/tools.hpp>

#include <pybind11/functional.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "arguments.hpp"
#include "bindings.hpp"

#include <memory>
#include <string>
#include <vector>

using namespace pybind11::literals;

namespace kjit::python {

void bind_tools(py::module_& m) {
  // What kjit.info() shows beside the CLI's kjit info, and "did you mean" as the CLI says it.
  m.def("find_disassembler", [] {
    const auto path = inspect::find_disassembler();
    return path ? py::object(py::str(path->string())) : py::object(py::none());
  });
  m.def("disassembler_unavailable_reason", &inspect::disassembler_unavailable_reason);
  m.def("closest_names", &closest_names, "word"_a, "candidates"_a);
  py::class_<inspect::DiffResult>(m, "DiffResult")
      .def_property_readonly("equal", &inspect::DiffResult::equal)
      .def("to_text", [](const inspect::DiffResult& d, bool color) {
        return d.to_text(color ? inspect::Color::always : inspect::Color::never);
      }, "color"_a = false)
      .def("to_json", &inspect::DiffResult::to_json)
      .def("__str__", [](const inspect::DiffResult& d) { return d.to_text(); })
      .def("__bool__", [](const inspect::DiffResult& d) { return !d.equal(); });
  m.def("diff", [](const CompileResult& a, const CompileResult& b, bool raw, std::string a_label,
                   std::string b_label) {
    inspect::DiffOptions o;
    o.raw = raw;
    o.a_label = a_label.empty() ? a.program_name : std::move(a_label);
    o.b_label = b_label.empty() ? b.program_name : std::move(b_label);
    return inspect::diff(a, b, o);
  }, "a"_a, "b"_a, "raw"_a = false, "a_label"_a = "", "b_label"_a = "");
  m.def("diff_ptx", [](std::string_view a, std::string_view b, bool raw) {
    inspect::DiffOptions o;
    o.raw = raw;
    return inspect::diff(a, b, o);
  }, "a"_a, "b"_a, "raw"_a = false);
  m.def("with_resource_report", &inspect::with_resource_report);
  m.def("resources", [](const CompileResult& r) {
    py::list out;
    for (const auto& u : inspect::resource_usage(r)) {
      // "function" is the name as users wrote it (demangled, as the profiler shows it); "symbol" the
      // PTX's and cubin's. constant, local and max_threads_per_block are None where unknown.
      out.append(py::dict("function"_a = u.name.empty() ? u.function : u.name, "symbol"_a = u.function,
                          "arch"_a = u.arch, "is_entry"_a = u.is_entry,
                          "registers"_a = u.registers, "barriers"_a = u.barriers, "stack_frame"_a = u.stack_frame,
                          "spill_stores"_a = u.spill_stores, "spill_loads"_a = u.spill_loads, "shared"_a = u.shared,
                          "constant"_a = u.constant, "local"_a = u.local,
                          "max_threads_per_block"_a = u.max_threads_per_block));
    }
    return out;
  });
  m.def("resources_table", [](const CompileResult& r) { return inspect::resources_table(inspect::resource_usage(r)); });
  m.def("sass", [](const CompileResult& r, std::string_view function) {
    py::gil_scoped_release unlocked;
    return inspect::sass(r, function);
  }, "result"_a, "function"_a = "");
  m.def("normalize_ptx", [](std::string_view ptx) { return inspect::normalize(ptx); });

  m.def("bench", [](const py::function& fn, double warmup, double rep, std::vector<double> quantiles, bool flush_l2,
                    const py::object& stream, int device) {
    BenchOptions o;
    o.warmup_ms = warmup;
    o.repeat_ms = rep;
    o.quantiles = std::move(quantiles);
    o.flush_l2 = flush_l2;
    auto handle = stream_handle(stream);
    o.stream = StreamRef(reinterpret_cast<CUstream_st*>(handle ? *handle : ambient_stream()));
    BenchResult r = kjit::bench([&](CUstream_st*) { fn(); }, o, Device::get(device));
    return py::dict("min_ms"_a = r.min_ms, "median_ms"_a = r.median_ms, "mean_ms"_a = r.mean_ms, "max_ms"_a = r.max_ms,
                    "quantile_ms"_a = r.quantile_ms, "repetitions"_a = r.repetitions, "samples_ms"_a = r.samples_ms);
  }, "fn"_a, "warmup"_a = 25.0, "rep"_a = 100.0, "quantiles"_a = std::vector<double>{}, "flush_l2"_a = true,
     "stream"_a = py::none(), "device"_a = 0);

  py::class_<Profiler>(m, "Profiler", "kjit's CUPTI profiler: every kernel, copy and launch while it records.")
      .def(py::init([](std::size_t max_events, bool memory, std::vector<std::string> metrics) {
        ProfileOptions o;
        o.max_events = max_events;
        o.memory = memory;
        o.metrics = std::move(metrics);
        return std::make_unique<Profiler>(o);
      }), "max_events"_a = 2'000'000, "memory"_a = true, "metrics"_a = std::vector<std::string>{})
      .def_property_readonly("active", &Profiler::active)
      .def_property_readonly("message", &Profiler::message)
      .def("stop", [](Profiler& p) {
        py::gil_scoped_release unlocked;
        p.stop();
      })
      .def("table", [](Profiler& p, std::string sort_by, std::size_t limit, bool by_shape, bool phases) {
        TableOptions o;
        o.sort_by = std::move(sort_by);
        o.limit = limit;
        o.by_shape = by_shape;
        o.phases = phases;
        return p.table(o);
      }, "sort_by"_a = "gpu_total", "limit"_a = 0, "by_shape"_a = false, "phases"_a = true)
      .def("summary_json", [](Profiler& p, std::string sort_by, std::size_t limit, bool by_shape) {
        TableOptions o;
        o.sort_by = std::move(sort_by);
        o.limit = limit;
        o.by_shape = by_shape;
        return to_json(p.summary(o));
      }, "sort_by"_a = "gpu_total", "limit"_a = 0, "by_shape"_a = false)
      .def("chrome_trace", &Profiler::chrome_trace)
      .def("export_chrome_trace", &Profiler::export_chrome_trace, "path"_a);
  py::class_<Profiler::Range>(m, "_Range");
  m.def("_range_begin", [](std::string name) { return std::make_unique<Profiler::Range>(name); });
}

}  // namespace kjit::python
