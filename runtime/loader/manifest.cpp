#include <kjit/error.hpp>
#include <kjit/manifest.hpp>

#include "runtime/compile/source_file.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <initializer_list>

namespace kjit {
namespace {

using nlohmann::json;

class Reader {
public:
  explicit Reader(const std::filesystem::path& path) : m_path(path) {}

  [[noreturn]] void fail(const std::string& where, const std::string& why) const {
    throw UsageError(fmt::format("reading kernel manifest {}: {}: {}", m_path.string(), where, why));
  }

  void check_keys(const json& object, const std::string& where, std::initializer_list<std::string_view> known) const {
    if (!object.is_object()) fail(where, fmt::format("expected an object, found {}", object.type_name()));
    for (const auto& [key, value] : object.items()) {
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        fail(where, fmt::format("unknown key \"{}\" (known: {})", key, fmt::join(known, ", ")));
      }
    }
  }

  std::string string(const json& v, const std::string& where) const {
    if (!v.is_string()) fail(where, fmt::format("expected a string, found {}", v.type_name()));
    return v.get<std::string>();
  }

  std::vector<std::string> strings(const json& object, const char* key, const std::string& where) const {
    std::vector<std::string> out;
    auto it = object.find(key);
    if (it == object.end()) return out;
    std::string at = fmt::format("{}.{}", where, key);
    if (!it->is_array()) fail(at, fmt::format("expected an array of strings, found {}", it->type_name()));
    for (std::size_t i = 0; i < it->size(); ++i) out.push_back(string((*it)[i], fmt::format("{}[{}]", at, i)));
    return out;
  }

  // The option keys, shared by "options" and the variants.
  void options(const json& object, const std::string& where, ManifestOptions& o) const {
    if (auto it = object.find("std"); it != object.end()) o.std = string(*it, where + ".std");
    for (const char* key : {"fast_math", "line_info"}) {
      if (auto it = object.find(key); it != object.end()) {
        if (!it->is_boolean()) fail(fmt::format("{}.{}", where, key), fmt::format("expected true or false, found {}", it->type_name()));
        (std::string_view(key) == "fast_math" ? o.fast_math : o.line_info) = it->get<bool>();
      }
    }
    if (auto it = object.find("max_registers"); it != object.end()) {
      if (!it->is_number_integer() || it->get<long long>() < 0 || it->get<long long>() > 65535) {
        fail(where + ".max_registers", fmt::format("expected a non-negative integer, found {}", it->dump()));
      }
      o.max_registers = it->get<int>();
    }
    o.defines = strings(object, "defines", where);
    o.flags = strings(object, "flags", where);
    for (const auto& d : strings(object, "include_dirs", where)) {
      std::filesystem::path p(d);
      o.include_dirs.push_back(p.is_absolute() ? p : (m_path.parent_path() / p).lexically_normal());
    }
  }

private:
  std::filesystem::path m_path;
};

void append(std::vector<std::string>& to, const std::vector<std::string>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

}  // namespace

const ManifestVariant& ManifestKernel::variant(std::string_view name) const {
  if (name.empty() && !variants.empty()) return variants.front();
  for (const auto& v : variants) {
    if (v.name == name) return v;
  }
  std::vector<std::string> names;
  for (const auto& v : variants) names.push_back(v.name.empty() ? "\"\" (default)" : v.name);
  throw UsageError(fmt::format("looking up variant \"{}\" of kernel file {}: no such variant; known: {}", name, file,
                               fmt::join(names, ", ")));
}

std::vector<std::string> ManifestKernel::variant_names() const {
  std::vector<std::string> out;
  for (const auto& v : variants) out.push_back(v.name);
  return out;
}

CompileOptions ManifestKernel::options_for(const ManifestVariant& v, const CompileOptions& base) const {
  CompileOptions o = base;
  for (const ManifestOptions* m : {&options, &v.options}) {
    if (m->std) o.std = *m->std;
    append(o.defines, m->defines);
    if (m->fast_math) o.fast_math = *m->fast_math;
    if (m->line_info) o.line_info = *m->line_info;
    if (m->max_registers) o.max_registers = *m->max_registers;
    append(o.flags, m->flags);
    // include_dirs go to the Program's include path (not the key): see runtime/kernel_request.
  }
  return o;
}

std::vector<std::string> ManifestKernel::name_expressions_for(const ManifestVariant& v) const {
  std::vector<std::string> out = instantiate;
  append(out, v.instantiate);
  return out;
}

Manifest Manifest::read(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::path file = std::filesystem::is_directory(path, ec) ? path / k_file_name : path;
  compile::FileContent f = compile::read_file(file);
  if (!f.ok()) throw IoError(fmt::format("reading kernel manifest {}: {}", file.string(), std::strerror(f.error)));
  return parse(f.bytes, file);
}

Manifest Manifest::parse(std::string_view text, const std::filesystem::path& path) {
  Reader r(path);
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    // e.what(): "[json.exception.parse_error.101] parse error at line 3, column 5: ..."
    std::string what = e.what();
    auto pos = what.find("] ");
    throw UsageError(fmt::format("reading kernel manifest {}: invalid JSON: {}", path.string(),
                                 pos == std::string::npos ? what : what.substr(pos + 2)));
  }
  r.check_keys(doc, "top level", {"kjit_manifest", "kernels"});
  auto version = doc.find("kjit_manifest");
  if (version == doc.end()) r.fail("top level", "missing \"kjit_manifest\": 1");
  if (!version->is_number_integer() || version->get<long long>() != 1) {
    r.fail("kjit_manifest", fmt::format("unsupported version {} (this kjit reads 1)", version->dump()));
  }
  Manifest m;
  m.m_path = path;
  auto kernels = doc.find("kernels");
  if (kernels == doc.end()) return m;
  if (!kernels->is_array()) r.fail("kernels", fmt::format("expected an array, found {}", kernels->type_name()));
  for (std::size_t i = 0; i < kernels->size(); ++i) {
    const json& k = (*kernels)[i];
    std::string where = fmt::format("kernels[{}]", i);
    r.check_keys(k, where, {"file", "options", "instantiate", "variants"});
    ManifestKernel kernel;
    auto file = k.find("file");
    if (file == k.end()) r.fail(where, "missing \"file\"");
    kernel.file = std::filesystem::path(r.string(*file, where + ".file")).lexically_normal().generic_string();
    if (kernel.file.empty() || std::filesystem::path(kernel.file).is_absolute() || kernel.file.starts_with("..")) {
      r.fail(where + ".file", fmt::format("\"{}\" must be a path relative to the manifest's folder", kernel.file));
    }
    if (auto o = k.find("options"); o != k.end()) {
      r.check_keys(*o, where + ".options",
                   {"std", "defines", "include_dirs", "fast_math", "line_info", "max_registers", "flags"});
      r.options(*o, where + ".options", kernel.options);
    }
    kernel.instantiate = r.strings(k, "instantiate", where);
    if (auto vs = k.find("variants"); vs != k.end()) {
      if (!vs->is_array()) r.fail(where + ".variants", fmt::format("expected an array, found {}", vs->type_name()));
      for (std::size_t j = 0; j < vs->size(); ++j) {
        const json& v = (*vs)[j];
        std::string vwhere = fmt::format("{}.variants[{}]", where, j);
        r.check_keys(v, vwhere, {"name", "std", "defines", "include_dirs", "fast_math", "line_info",
                                 "max_registers", "flags", "instantiate"});
        ManifestVariant variant;
        auto name = v.find("name");
        if (name == v.end()) r.fail(vwhere, "missing \"name\"");
        variant.name = r.string(*name, vwhere + ".name");
        if (variant.name.empty()) r.fail(vwhere + ".name", "a variant needs a non-empty name");
        for (const auto& earlier : kernel.variants) {
          if (earlier.name == variant.name) r.fail(vwhere + ".name", fmt::format("duplicate variant \"{}\"", variant.name));
        }
        r.options(v, vwhere, variant.options);
        variant.instantiate = r.strings(v, "instantiate", vwhere);
        kernel.variants.push_back(std::move(variant));
      }
    }
    if (kernel.variants.empty()) kernel.variants.emplace_back();
    for (const auto& earlier : m.m_kernels) {
      if (earlier.file == kernel.file) r.fail(where + ".file", fmt::format("\"{}\" is listed twice", kernel.file));
    }
    m.m_kernels.push_back(std::move(kernel));
  }
  return m;
}

const ManifestKernel* Manifest::find(std::string_view file) const {
  for (const auto& k : m_kernels) {
    if (k.file == file) return &k;
  }
  return nullptr;
}

}  // namespace kjit
