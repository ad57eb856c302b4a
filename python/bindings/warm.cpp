// Warming ahead of time, whole or one shard of N (kjit.warm, kjit.Shard), and the merge of the
// shards' bundles (kjit.merge_bundles): libkjit_tools' warm.hpp, shard.hpp and cache.hpp,
// converted. The report is a dict with the keys of `kjit --json warm`.
#include <kjit/error.hpp>
#include <kjit/tools/cache.hpp>
#include <kjit/tools/shard.hpp>
#include <kjit/tools/warm.hpp>

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "bindings.hpp"

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

using namespace pybind11::literals;

namespace kjit::python {
namespace {

// shard=: None (every item), a kjit.Shard, (index, count), or what --shard takes ("2/8", "auto", "auto/8").
Shard shard_of(const py::object& shard) {
  if (shard.is_none()) return Shard();
  if (py::isinstance<Shard>(shard)) return shard.cast<Shard>();
  if (py::isinstance<py::str>(shard)) return Shard::parse(shard.cast<std::string>());
  if (py::isinstance<py::tuple>(shard) || py::isinstance<py::list>(shard)) {
    const auto pair = shard.cast<py::sequence>();
    if (pair.size() == 2 && py::isinstance<py::int_>(pair[0]) && py::isinstance<py::int_>(pair[1]) &&
        !py::isinstance<py::bool_>(pair[0]) && !py::isinstance<py::bool_>(pair[1])) {
      const long long index = pair[0].cast<long long>(), count = pair[1].cast<long long>();
      const std::string given = "shard=(" + std::to_string(index) + ", " + std::to_string(count) + ")";
      if (index < 0 || count < 0 || count > Shard::k_max_count) {
        throw UsageError(given + ": shard I of N, 0 <= I < N <= " + std::to_string(Shard::k_max_count));
      }
      return Shard(static_cast<unsigned>(index), static_cast<unsigned>(count), given);
    }
  }
  throw py::type_error("shard= takes None, (index, count), a kjit.Shard, or \"I/N\", \"auto\", \"auto/N\"; given " +
                       std::string(Py_TYPE(shard.ptr())->tp_name));
}

py::dict shard_dict(const Shard& s, std::size_t elsewhere) {
  return py::dict("index"_a = s.index(), "count"_a = s.count(), "from"_a = s.source(), "elsewhere"_a = elsewhere);
}

py::dict bundle_dict(const CacheBundleInfo& b) {
  return py::dict("generation"_a = b.generation, "toolkit"_a = b.toolkit, "kjit_version"_a = b.kjit_version,
                  "entries"_a = b.entries, "bytes"_a = b.bytes,
                  "created"_a = std::chrono::duration_cast<std::chrono::seconds>(b.created.time_since_epoch()).count(),
                  "signature"_a = b.signature, "selection"_a = b.selection);
}

}  // namespace

void bind_warm(py::module_& m) {
  py::class_<Shard>(m, "Shard", "One of N parts of a warm or tune: items go to shards by rendezvous hashing of "
                                "their cache keys (shards count from 0).")
      .def(py::init<unsigned, unsigned, std::string>(), "index"_a, "count"_a, "source"_a = "")
      .def_static("parse", [](std::string_view spec) { return Shard::parse(spec); }, "spec"_a,
                  "What --shard takes: \"I/N\", \"auto\" or \"auto/N\".")
      .def_static("from_environment", [](std::optional<unsigned> count) { return Shard::from_environment(count); },
                  "count"_a = py::none(),
                  "SLURM_ARRAY_TASK_ID/COUNT, JOB_COMPLETION_INDEX (with count), or RANK/WORLD_SIZE.")
      .def_property_readonly("index", &Shard::index)
      .def_property_readonly("count", &Shard::count)
      .def_property_readonly("source", &Shard::source)
      .def("shard_of", &Shard::shard_of, "key"_a)
      .def("owns", &Shard::owns, "key"_a)
      .def("__eq__", [](const Shard& a, const Shard& b) { return a == b; })
      .def("__str__", &Shard::str)
      .def("__repr__", [](const Shard& s) { return "<kjit.Shard " + s.str() + ">"; });

  m.def("warm", [](std::vector<std::filesystem::path> sources, std::vector<std::string> archs, unsigned jobs,
                   bool precompiled_headers, const py::object& shard, std::filesystem::path bundle,
                   const py::kwargs& config) {
    WarmOptions o;
    o.sources = std::move(sources);
    for (const auto& a : archs) o.archs.push_back(Arch::parse(a));
    o.jobs = jobs;
    o.precompiled_headers = precompiled_headers;
    o.shard = shard_of(shard);
    o.bundle = std::move(bundle);
    o.runtime = runtime_config(config);
    WarmReport r;
    {
      py::gil_scoped_release unlocked;
      r = warm(o);
    }
    py::list items;
    for (const auto& i : r.items) {
      items.append(py::dict("manifest"_a = i.manifest.string(), "file"_a = i.file, "variant"_a = i.variant,
                            "arch"_a = i.arch.str(), "status"_a = std::string(to_string(i.status)),
                            "pch"_a = i.pch == PchUse::none ? std::string() : std::string(to_string(i.pch)),
                            "ms"_a = i.ms, "key"_a = i.key, "error"_a = i.error));
    }
    py::object bundle_out = py::none();
    if (r.bundle) {
      py::dict b = bundle_dict(r.bundle->bundle);
      b["file"] = r.bundle->file.string();
      b["missing"] = r.bundle->missing;
      bundle_out = b;
    }
    return py::dict("items"_a = items, "compiled"_a = r.compiled, "cached"_a = r.cached, "failed"_a = r.failed,
                    "wall_ms"_a = r.wall_ms, "jobs"_a = r.jobs, "cache_dir"_a = r.cache_dir.string(),
                    "shard"_a = shard_dict(r.shard, r.elsewhere), "bundle"_a = bundle_out, "ok"_a = r.ok());
  }, "sources"_a, "archs"_a, "jobs"_a, "precompiled_headers"_a, "shard"_a, "bundle"_a);

  m.def("merge_bundles", [](std::vector<std::filesystem::path> inputs, std::filesystem::path output,
                            const py::kwargs& config) {
    const RuntimeConfig c = runtime_config(config);  // the keys: remote_signing_key_file, ... (KJIT_REMOTE_*)
    BundleMergeOptions o;
    o.keys = BundleKeys{c.remote_secret_file, c.remote_signing_key_file, c.remote_public_key_file};
    BundleMergeResult r;
    {
      py::gil_scoped_release unlocked;
      r = merge_bundles(inputs, output, o);
    }
    py::list in;
    for (const auto& b : r.inputs) in.append(bundle_dict(b));
    return py::dict("file"_a = r.file.string(), "file_size"_a = r.file_size, "bundle"_a = bundle_dict(r.bundle),
                    "inputs"_a = in, "duplicates"_a = r.duplicates, "conflicts"_a = r.conflicts);
  }, "inputs"_a, "output"_a);
}

}  // namespace kjit::python
