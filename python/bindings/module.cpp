// kjit._kjit: the Python binding of libkjit's public API (include/kjit). It converts between
// Python and C++ and holds no logic of its own: what to compile, cache, check and launch is
// libkjit's. The pure-Python layer (python/src/kjit/__init__.py) gives it Python's shapes.
#include <kjit/kjit.hpp>
#include <kjit/tools.hpp>

#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "arguments.hpp"
#include "exceptions.hpp"
#include "launcher.hpp"

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace py = pybind11;
using namespace py::literals;

namespace kjit::python {
namespace {

// One PyKernel per loaded kernel while any is alive: a repeated load (a registry hit) and lookup
// reads the PTX's parameter table once. Keyed by the kernel's CUfunction; the GIL guards the map.
std::shared_ptr<PyKernel> kernel_of(const Module& mod, std::string_view name) {
  static auto* cache = new std::map<std::pair<CUfunc_st*, std::string>, std::weak_ptr<PyKernel>, std::less<>>();
  KernelHandle handle = mod.kernel_handle(name);
  auto key = std::make_pair(handle.handle(), std::string(name));
  if (auto it = cache->find(key); it != cache->end()) {
    if (auto k = it->second.lock()) return k;
  }
  auto k = std::make_shared<PyKernel>(PyKernel{std::move(handle), mod.signature(name)});
  if (cache->size() > 4096) std::erase_if(*cache, [](const auto& e) { return e.second.expired(); });
  (*cache)[key] = k;
  return k;
}

py::list parameters_list(const KernelSignature& s) {
  py::list out;
  for (const auto& p : s.parameters()) {
    out.append(py::dict("index"_a = p.index, "name"_a = p.name, "type"_a = p.type, "ptx_type"_a = p.ptx_type,
                        "kind"_a = std::string(to_string(p.kind)), "size"_a = p.size, "align"_a = p.align,
                        "read_only"_a = p.read_only, "source_name"_a = p.source_name));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Options and configuration from keyword arguments (the Python layer names them).

RuntimeConfig runtime_config(const py::kwargs& kw) {
  RuntimeConfig c = RuntimeConfig::from_environment();
  for (auto [key, value] : kw) {
    std::string k = key.cast<std::string>();
    if (value.is_none()) continue;
    if (k == "cache_dir") {
      c.cache_dir = value.cast<std::filesystem::path>();
      if (!kw.contains("cache_required")) c.cache_required = CacheRequired::when_named;  // as --cache-dir
    } else if (k == "cache_required") {
      auto v = value.cast<std::string>();
      if (v == "never") c.cache_required = CacheRequired::never;
      else if (v == "when_named") c.cache_required = CacheRequired::when_named;
      else if (v == "always") c.cache_required = CacheRequired::always;
      else throw UsageError("making a kjit.Runtime: cache_required is never, when_named or always; given " + v);
    }
    else if (k == "cache_max_size") c.cache_max_size = value.cast<std::uint64_t>();
    else if (k == "cache_disabled") c.cache_disabled = value.cast<bool>();
    else if (k == "always_compile") c.always_compile = value.cast<bool>();
    else if (k == "dump_dir") c.dump_dir = value.cast<std::filesystem::path>();
    else if (k == "precompiled_headers") c.precompiled_headers = value.cast<bool>();
    else if (k == "remote_cache") c.remote_cache = value.cast<std::string>();
    else if (k == "remote_read_only") c.remote_read_only = value.cast<bool>();
    else if (k == "remote_secret_file") c.remote_secret_file = value.cast<std::filesystem::path>();
    else if (k == "cache_shared") c.cache_shared = value.cast<bool>();
    else {
      throw UsageError("making a kjit.Runtime: unknown option " + k + " (cache_dir, cache_required, cache_max_size, cache_disabled, "
                       "always_compile, dump_dir, precompiled_headers, remote_cache, remote_read_only, "
                       "remote_secret_file, cache_shared)");
    }
  }
  return c;
}

py::dict stats_dict(const RuntimeStats& s) {
  py::dict out;
  for_each_counter(s, [&](const char* name, std::uint64_t value) { out[name] = value; });
  return out;
}

std::optional<Device> device_of(const py::object& device) {
  if (device.is_none()) return std::nullopt;
  return Device::get(device.cast<int>());
}

py::bytes as_bytes(const std::string& s) { return py::bytes(s.data(), s.size()); }

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

void bind(py::module_& m) {
  register_exceptions(m);

  m.def("version", [] { return std::string(kjit::version()); });
  m.def("nvrtc_version", &nvrtc_version);
  m.def("supported_archs", &supported_archs);
  m.def("driver_available", &driver_available);
  m.def("driver_unavailable_reason", &driver_unavailable_reason);
  m.def("device_count", &device_count);
  m.def("toolkit_paths", [] {
    ToolkitPaths t = toolkit_paths();
    return py::dict("nvrtc_library"_a = t.nvrtc_library, "include_dirs"_a = t.include_dirs);
  }, "Where the loaded libnvrtc is, and the include folders NVRTC is given.");

  py::class_<Program>(m, "Program", "What to compile: a name, CUDA source, headers, name expressions.")
      .def(py::init<std::string, std::string>(), "name"_a, "source"_a)
      .def("header", [](Program& p, std::string name, std::string content) -> Program& {
             return p.header(std::move(name), std::move(content)); }, "name"_a, "content"_a,
           py::return_value_policy::reference_internal, "An in-memory header reachable by #include \"name\".")
      .def("instantiate", [](Program& p, std::string e) -> Program& { return p.instantiate(std::move(e)); },
           "name_expression"_a, py::return_value_policy::reference_internal,
           "A name expression NVRTC instantiates (\"scale<float>\").")
      .def("directory", [](Program& p, std::filesystem::path d) -> Program& { return p.directory(std::move(d)); },
           py::return_value_policy::reference_internal)
      .def_property_readonly("name", &Program::name)
      .def_property_readonly("source", &Program::source)
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
      .def_readonly("ptx", &CompileResult::ptx)
      .def_property_readonly("cubin", [](const CompileResult& r) { return as_bytes(r.cubin); })
      .def_property_readonly("ltoir", [](const CompileResult& r) { return as_bytes(r.ltoir); })
      .def_readonly("log", &CompileResult::log)
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
             pack_arguments(s, args.size() ? &PyTuple_GET_ITEM(args.ptr(), 0) : nullptr, args.size(), buffer.data(),
                            pointers.data(), false);
             return py::bytes(reinterpret_cast<const char*>(buffer.data()), s.buffer_bytes());
           }, "Checks and packs arguments as a launch would; returns the parameter buffer's bytes.")
      .def("name_parameters", &KernelSignature::name_parameters, "source"_a,
           "Reads the parameters' names from the kernel's declaration in its source; False when not found.")
      .def("__str__", &KernelSignature::to_string)
      .def("__repr__", [](const KernelSignature& s) { return "<kjit.KernelSignature " + s.to_string() + ">"; });

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
  register_launcher(m, kernel_type);  // k[grid, block] or k[grid, block, shared_mem] or k[grid, block, shared_mem, stream]
  kernel_type
      .def("launch", [](const std::shared_ptr<PyKernel>& k, const py::handle& grid, const py::handle& block,
                        const py::tuple& args, std::size_t shared_mem, const py::handle& stream,
                        const py::handle& cluster, bool cooperative, bool strict) {
             LaunchConfig config;
             config.grid = to_dim3(grid, "grid");
             config.block = to_dim3(block, "block");
             config.shared_mem = shared_mem;
             config.cluster = cluster.is_none() ? Dim3(0, 0, 0) : to_dim3(cluster, "cluster");
             config.cooperative = cooperative;
             const auto n = static_cast<std::size_t>(PyTuple_GET_SIZE(args.ptr()));
             launch(*k, config, stream_handle(stream), strict, n ? &PyTuple_GET_ITEM(args.ptr(), 0) : nullptr, n);
           }, "grid"_a, "block"_a, "args"_a = py::tuple(), "shared_mem"_a = 0, "stream"_a = py::none(),
           "cluster"_a = py::none(), "cooperative"_a = false, "strict"_a = false)
      .def("_name_parameters", [](PyKernel& k, std::string_view source) {
             return k.signature.name_parameters(source);
           }, "source"_a, "Names the parameters from the kernel's declaration in its source (no GPU needed).")
      .def_property_readonly("name", [](const PyKernel& k) { return k.handle.name(); })
      .def_property_readonly("signature", [](const PyKernel& k) { return k.signature; })
      .def_property_readonly("parameters", [](const PyKernel& k) { return parameters_list(k.signature); })
      .def("attributes", [](const PyKernel& k) {
        KernelAttributes a = k.handle.attributes();
        return py::dict("registers"_a = a.registers, "static_shared_bytes"_a = a.static_shared_bytes,
                        "max_dynamic_shared_bytes"_a = a.max_dynamic_shared_bytes, "local_bytes"_a = a.local_bytes,
                        "const_bytes"_a = a.const_bytes, "max_threads_per_block"_a = a.max_threads_per_block);
      })
      .def("suggested_block_size", [](const PyKernel& k, std::size_t s) { return k.handle.suggested_block_size(s); },
           "dynamic_shared"_a = 0)
      .def("__repr__", [](const PyKernel& k) { return "<kjit.Kernel " + k.signature.to_string() + ">"; });

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

  py::class_<Module>(m, "Module", "A compiled program loaded for a device.")
      .def("kernel", [](const Module& mod, std::string_view name) { return kernel_of(mod, name); }, "name"_a)
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

  // Inspection.
  py::class_<inspect::DiffResult>(m, "DiffResult")
      .def_property_readonly("equal", &inspect::DiffResult::equal)
      .def("to_text", [](const inspect::DiffResult& d, bool color) {
        return d.to_text(color ? inspect::Color::always : inspect::Color::never);
      }, "color"_a = false)
      .def("to_json", &inspect::DiffResult::to_json)
      .def("__str__", [](const inspect::DiffResult& d) { return d.to_text(); })
      .def("__bool__", [](const inspect::DiffResult& d) { return !d.equal(); });
  m.def("diff", [](const CompileResult& a, const CompileResult& b, bool raw) {
    inspect::DiffOptions o;
    o.raw = raw;
    o.a_label = a.program_name;
    o.b_label = b.program_name;
    return inspect::diff(a, b, o);
  }, "a"_a, "b"_a, "raw"_a = false);
  m.def("diff_ptx", [](std::string_view a, std::string_view b, bool raw) {
    inspect::DiffOptions o;
    o.raw = raw;
    return inspect::diff(a, b, o);
  }, "a"_a, "b"_a, "raw"_a = false);
  m.def("with_resource_report", &inspect::with_resource_report);
  m.def("resources", [](const CompileResult& r) {
    py::list out;
    for (const auto& u : inspect::resource_usage(r)) {
      out.append(py::dict("function"_a = u.function, "arch"_a = u.arch, "is_entry"_a = u.is_entry,
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

  // Timing.
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

  // Profiling.
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

PYBIND11_MODULE(_kjit, m) {
  m.doc() = "kjit's C++ library (libkjit), bound for Python; use the package kjit.";
  kjit::python::bind(m);
}
