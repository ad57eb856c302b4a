#include <kjit/error.hpp>
#include <kjit/manifest.hpp>

#include "core/base/source_file.hpp"
#include "core/compile/options/option_fields.hpp"
#include "core/tune/spec.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <type_traits>

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
    check_keys(object, where, std::vector<std::string_view>(known));
  }

  void check_keys(const json& object, const std::string& where, const std::vector<std::string_view>& known) const {
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

  // The option keys, shared by "options" and the variants: one a row of the table with a manifest
  // name (compile::k_option_fields), read as its member's type.
  void options(const json& object, const std::string& where, ManifestOptions& o) const {
    compile::for_each_option_field([&](const auto& field) {
      const CompileOptionField& row = field.row;
      if (row.manifest.empty()) return;
      auto it = object.find(std::string(row.manifest));
      if (it == object.end()) return;
      const std::string at = fmt::format("{}.{}", where, row.manifest);
      auto& member = o.values.*field.member;
      using T = std::decay_t<decltype(member)>;
      if constexpr (std::is_same_v<T, std::string>) {
        member = string(*it, at);
      } else if constexpr (std::is_same_v<T, bool>) {
        if (!it->is_boolean()) fail(at, fmt::format("expected true or false, found {}", it->type_name()));
        member = it->template get<bool>();
      } else if constexpr (std::is_same_v<T, int>) {
        member = static_cast<int>(integer(*it, at, row.min, row.max));
      } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
        member = strings(object, std::string(row.manifest).c_str(), where);
      } else if constexpr (std::is_same_v<T, std::vector<std::filesystem::path>>) {
        for (const auto& d : strings(object, std::string(row.manifest).c_str(), where)) {
          std::filesystem::path p(d);
          member.push_back(p.is_absolute() ? p : (m_path.parent_path() / p).lexically_normal());
        }
      } else {
        fail(at, "not a manifest key");  // the arch: chosen by the loader or kjit warm --arch
      }
      o.given.emplace_back(row.name);
    });
  }

  long long integer(const json& v, const std::string& where, long long min, long long max) const {
    if (!v.is_number_integer() || v.get<long long>() < min || v.get<long long>() > max) {
      fail(where, fmt::format("expected an integer from {} to {}, found {}", min, max, v.dump()));
    }
    return v.get<long long>();
  }

  // 256, or [16, 16] / [16, 16, 1].
  Dim3 dims(const json& v, const std::string& where, unsigned min) const {
    if (v.is_number_integer()) return Dim3(static_cast<unsigned>(integer(v, where, min, 0x7fffffff)));
    if (!v.is_array() || v.empty() || v.size() > 3) fail(where, fmt::format("expected a number or 1 to 3 numbers, found {}", v.dump()));
    unsigned d[3] = {1, 1, 1};
    for (std::size_t i = 0; i < v.size(); ++i) d[i] = static_cast<unsigned>(integer(v[i], fmt::format("{}[{}]", where, i), min, 0x7fffffff));
    return Dim3(d[0], d[1], d[2]);
  }

  // A number or an expression, as a TuneArgument keeps them.
  std::string number_or_text(const json& v, const std::string& where) const {
    if (v.is_number()) return v.dump();
    if (v.is_string()) return v.get<std::string>();
    fail(where, fmt::format("expected a number or a string, found {}", v.type_name()));
  }

  TuneSpec tuning(const json& t, const std::string& where) const {
    check_keys(t, where, {"name", "candidates", "key", "grid", "arguments", "shapes"});
    TuneSpec s;
    auto name = t.find("name");
    if (name == t.end()) fail(where, "missing \"name\"");
    s.name = string(*name, where + ".name");
    if (s.name.empty()) fail(where + ".name", "a tuning entry needs a non-empty name");
    auto candidates = t.find("candidates");
    if (candidates == t.end() || !candidates->is_array() || candidates->empty()) {
      fail(where + ".candidates", "expected a non-empty array of candidates");
    }
    for (std::size_t i = 0; i < candidates->size(); ++i) {
      const json& c = (*candidates)[i];
      const std::string at = fmt::format("{}.candidates[{}]", where, i);
      check_keys(c, at, {"kernel", "block", "param", "defines", "shared_mem", "cluster", "label"});
      TuneCandidate cand;
      auto kernel = c.find("kernel");
      if (kernel == c.end()) fail(at, "missing \"kernel\" (its name or name expression)");
      cand.kernel = string(*kernel, at + ".kernel");
      if (auto b = c.find("block"); b != c.end()) cand.block = dims(*b, at + ".block", 1);
      if (auto p = c.find("param"); p != c.end()) cand.param = integer(*p, at + ".param", LLONG_MIN, LLONG_MAX);
      cand.defines = strings(c, "defines", at);
      if (auto m = c.find("shared_mem"); m != c.end()) cand.shared_mem = static_cast<std::size_t>(integer(*m, at + ".shared_mem", 0, 1LL << 40));
      if (auto k = c.find("cluster"); k != c.end()) cand.cluster = dims(*k, at + ".cluster", 1);
      if (auto l = c.find("label"); l != c.end()) cand.label = string(*l, at + ".label");
      s.candidates.push_back(std::move(cand));
    }
    if (t.find("key") == t.end()) fail(where, "missing \"key\": the shape variables whose change may change the winner ([\"pow2(n)\"], or [])");
    s.key = strings(t, "key", where);
    auto grid = t.find("grid");
    if (grid == t.end()) fail(where, "missing \"grid\": an expression of the shape and the candidate (\"ceil_div(n, block)\")");
    if (grid->is_string()) s.grid.push_back(grid->get<std::string>());
    else s.grid = strings(t, "grid", where);
    if (auto args = t.find("arguments"); args != t.end()) {
      if (!args->is_array()) fail(where + ".arguments", fmt::format("expected an array, found {}", args->type_name()));
      for (std::size_t i = 0; i < args->size(); ++i) {
        const json& a = (*args)[i];
        const std::string at = fmt::format("{}.arguments[{}]", where, i);
        check_keys(a, at, {"name", "type", "count", "value", "fill", "output"});
        TuneArgument arg;
        if (auto n = a.find("name"); n != a.end()) arg.name = string(*n, at + ".name");
        auto type = a.find("type");
        if (type == a.end()) fail(at, "missing \"type\" (\"const float*\", \"int\", ...)");
        arg.type = string(*type, at + ".type");
        if (auto c = a.find("count"); c != a.end()) arg.count = number_or_text(*c, at + ".count");
        if (auto v = a.find("value"); v != a.end()) arg.value = number_or_text(*v, at + ".value");
        if (auto f = a.find("fill"); f != a.end()) arg.fill = number_or_text(*f, at + ".fill");
        if (auto o = a.find("output"); o != a.end()) {
          const std::string out = string(*o, at + ".output");
          if (out == "reset") arg.output = TuneArgument::Output::reset_to_zero;
          else if (out == "restore") arg.output = TuneArgument::Output::restore;
          else fail(at + ".output", fmt::format("\"{}\": expected reset (zeroed before each timing run) or restore", out));
        }
        s.arguments.push_back(std::move(arg));
      }
    }
    if (auto shapes = t.find("shapes"); shapes != t.end()) {
      if (!shapes->is_array()) fail(where + ".shapes", fmt::format("expected an array, found {}", shapes->type_name()));
      for (std::size_t i = 0; i < shapes->size(); ++i) {
        const json& sh = (*shapes)[i];
        const std::string at = fmt::format("{}.shapes[{}]", where, i);
        if (!sh.is_object()) fail(at, fmt::format("expected an object of integers ({{\"n\": 1024}}), found {}", sh.type_name()));
        auto& values = s.shapes.emplace_back();
        for (const auto& [var, value] : sh.items()) {
          values.emplace_back(var, integer(value, fmt::format("{}.{}", at, var), LLONG_MIN, LLONG_MAX));
        }
      }
      if (!s.shapes.empty() && s.arguments.empty()) {
        fail(where + ".arguments", "kjit tune makes up the arguments of the listed shapes: list them");
      }
    }
    try {
      tune::CompiledSpec checked(s);
    } catch (const UsageError& e) {
      fail(where, e.what());
    }
    return s;
  }

private:
  std::filesystem::path m_path;
};

// The option keys a manifest reads (after `first`, the object's own keys).
std::vector<std::string_view> option_keys(std::initializer_list<std::string_view> first = {}) {
  std::vector<std::string_view> keys(first);
  for (const auto& row : compile_option_fields()) {
    if (!row.manifest.empty()) keys.push_back(row.manifest);
  }
  return keys;
}

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

const TuneSpec& ManifestKernel::tuning_spec(std::string_view name) const {
  for (const auto& t : tuning) {
    if (t.name == name) return t;
  }
  std::vector<std::string> names;
  for (const auto& t : tuning) names.push_back(t.name);
  throw UsageError(fmt::format("looking up tuning entry \"{}\" of kernel file {}: no such entry; known: {}", name, file,
                               names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "))));
}

std::vector<std::string> ManifestKernel::variant_names() const {
  std::vector<std::string> out;
  for (const auto& v : variants) out.push_back(v.name);
  return out;
}

bool ManifestOptions::has(std::string_view field) const {
  return std::find(given.begin(), given.end(), field) != given.end();
}

CompileOptions ManifestKernel::options_for(const ManifestVariant& v, const CompileOptions& base) const {
  CompileOptions o = base;
  for (const ManifestOptions* m : {&options, &v.options}) {
    compile::for_each_option_field([&](const auto& field) {
      if (!m->has(field.row.name)) return;
      auto& member = o.*field.member;
      const auto& given = m->values.*field.member;
      using T = std::decay_t<decltype(member)>;
      if constexpr (std::is_same_v<T, std::vector<std::filesystem::path>>) {
        // include_dirs go to the Program's include path (not the key): see loader/kernel_request.
      } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
        member.insert(member.end(), given.begin(), given.end());  // lists append
      } else {
        member = given;  // scalars override
      }
    });
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
  system::FileContent f = base::read_source_file(file);
  if (!f.ok()) throw IoError(fmt::format("reading kernel manifest {}: {}", file.string(), f.why()));
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
    r.check_keys(k, where, {"file", "options", "instantiate", "variants", "tuning"});
    ManifestKernel kernel;
    auto file = k.find("file");
    if (file == k.end()) r.fail(where, "missing \"file\"");
    kernel.file = std::filesystem::path(r.string(*file, where + ".file")).lexically_normal().generic_string();
    if (kernel.file.empty() || std::filesystem::path(kernel.file).is_absolute() || kernel.file.starts_with("..")) {
      r.fail(where + ".file", fmt::format("\"{}\" must be a path relative to the manifest's folder", kernel.file));
    }
    if (auto o = k.find("options"); o != k.end()) {
      r.check_keys(*o, where + ".options", option_keys());
      r.options(*o, where + ".options", kernel.options);
    }
    kernel.instantiate = r.strings(k, "instantiate", where);
    if (auto vs = k.find("variants"); vs != k.end()) {
      if (!vs->is_array()) r.fail(where + ".variants", fmt::format("expected an array, found {}", vs->type_name()));
      for (std::size_t j = 0; j < vs->size(); ++j) {
        const json& v = (*vs)[j];
        std::string vwhere = fmt::format("{}.variants[{}]", where, j);
        r.check_keys(v, vwhere, option_keys({"name", "instantiate"}));
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
    if (auto ts = k.find("tuning"); ts != k.end()) {
      if (!ts->is_array()) r.fail(where + ".tuning", fmt::format("expected an array, found {}", ts->type_name()));
      for (std::size_t j = 0; j < ts->size(); ++j) {
        TuneSpec spec = r.tuning((*ts)[j], fmt::format("{}.tuning[{}]", where, j));
        for (const auto& earlier : kernel.tuning) {
          if (earlier.name == spec.name) r.fail(fmt::format("{}.tuning[{}].name", where, j), fmt::format("duplicate tuning entry \"{}\"", spec.name));
        }
        kernel.tuning.push_back(std::move(spec));
      }
    }
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
