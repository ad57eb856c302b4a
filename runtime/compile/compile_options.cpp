// Arch parsing and the one canonical marshalling of CompileOptions to NVRTC arguments.
#include <kjit/compile_options.hpp>
#include <kjit/error.hpp>

#include "runtime/compile/option_marshalling.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>

namespace kjit {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// "90" or "90a": number and suffix.
bool parse_arch_number(std::string_view text, int& number, std::string& suffix) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, number);
  if (ec != std::errc() || ptr == text.data() || number < 10 || number > 1999) return false;
  suffix.assign(ptr, end);
  return suffix.empty() || suffix == "a" || suffix == "f";
}

// Value of "--name=value" / "-name=value" / "-name value" forms; advances i for the last.
bool take_value(const std::vector<std::string>& flags, std::size_t& i, std::initializer_list<std::string_view> names,
                std::string& value) {
  std::string_view f = flags[i];
  for (std::string_view name : names) {
    if (f == name) {
      if (i + 1 >= flags.size()) {
        throw UsageError(fmt::format("reading compile flag \"{}\": it needs a value", f));
      }
      value = flags[++i];
      return true;
    }
    if (starts_with(f, name) && f.size() > name.size() && f[name.size()] == '=') {
      value = std::string(f.substr(name.size() + 1));
      return true;
    }
  }
  return false;
}

}  // namespace

Arch Arch::parse(std::string_view text) {
  int number = 0;
  std::string suffix;
  Arch result = native();
  if (text == "native") return native();
  if (starts_with(text, "sm_") && parse_arch_number(text.substr(3), number, suffix)) {
    result = sm(number);
  } else if (starts_with(text, "compute_") && parse_arch_number(text.substr(8), number, suffix)) {
    result = compute(number);
  } else if (parse_arch_number(text, number, suffix)) {
    result = sm(number);
  } else {
    throw UsageError(fmt::format("reading arch \"{}\": expected native, sm_XX, sm_XXa, compute_XX or XX", text));
  }
  result.m_suffix = suffix;
  return result;
}

std::string Arch::str() const {
  switch (m_kind) {
  case Kind::native: return "native";
  // No fmt here: this is on a fresh process's first request, where fmt's code is cold.
  case Kind::real: return "sm_" + std::to_string(m_number) + m_suffix;
  case Kind::virtual_: return "compute_" + std::to_string(m_number) + m_suffix;
  }
  return "?";
}

CompileOptions normalized(const CompileOptions& options) {
  CompileOptions out = options;
  out.flags.clear();
  const auto& flags = options.flags;
  for (std::size_t i = 0; i < flags.size(); ++i) {
    std::string_view f = flags[i];
    std::string value;
    if (f.empty()) continue;
    if (f == "-use_fast_math" || f == "--use_fast_math") {
      out.fast_math = true;
    } else if (f == "-lineinfo" || f == "--generate-line-info") {
      out.line_info = true;
    } else if (f == "-G" || f == "--device-debug") {
      out.device_debug = true;
    } else if (f == "-rdc=true" || f == "--relocatable-device-code=true" || f == "-dc") {
      out.flags.emplace_back("-rdc=true");  // one spelling: one key (a Link adds it too)
    } else if (f == "-rdc=false" || f == "--relocatable-device-code=false") {
      // the default
    } else if (f == "-dlto" || f == "--dlink-time-opt") {
      out.flags.emplace_back("-dlto");
    } else if (f == "-O1" || f == "-O2" || f == "-O3") {
      // NVRTC always optimizes device code; accepted for load_inline compatibility.
    } else if (f == "-O0") {
      throw UsageError("reading compile flag \"-O0\": NVRTC has no -O0; use --device-debug (-G) for "
                       "unoptimized device code");
    } else if (take_value(flags, i, {"-arch", "--gpu-architecture"}, value)) {
      out.arch = Arch::parse(value);
    } else if (take_value(flags, i, {"-std", "--std"}, value)) {
      out.std = value;
    } else if (take_value(flags, i, {"-maxrregcount", "--maxrregcount"}, value)) {
      int n = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || p != value.data() + value.size() || n <= 0) {
        throw UsageError(fmt::format("reading compile flag maxrregcount=\"{}\": expected a positive number", value));
      }
      out.max_registers = n;
    } else if (take_value(flags, i, {"-D", "--define-macro"}, value)) {
      out.defines.push_back(value);
    } else if (starts_with(f, "-D") && f.size() > 2) {
      out.defines.emplace_back(f.substr(2));
    } else if (take_value(flags, i, {"-I", "--include-path"}, value)) {
      out.include_dirs.emplace_back(value);
    } else if (starts_with(f, "-I") && f.size() > 2) {
      out.include_dirs.emplace_back(std::string(f.substr(2)));
    } else if (f == "-Xptxas" || f == "--ptxas-options") {
      if (i + 1 >= flags.size()) throw UsageError(fmt::format("reading compile flag \"{}\": it needs a value", f));
      out.flags.push_back(fmt::format("--ptxas-options={}", flags[++i]));
    } else if (starts_with(f, "-Xptxas=")) {
      out.flags.push_back(fmt::format("--ptxas-options={}", f.substr(8)));
    } else {
      out.flags.emplace_back(f);
    }
  }
  if (out.std.rfind("c++", 0) != 0) out.std = "c++" + out.std;
  if (out.std != "c++03" && out.std != "c++11" && out.std != "c++14" && out.std != "c++17" && out.std != "c++20") {
    throw UsageError(fmt::format("reading the C++ standard \"{}\": NVRTC accepts c++03, c++11, c++14, c++17 and c++20",
                                 options.std));
  }
  // Exact duplicates change nothing; drop them so that they do not change the key either.
  auto dedupe = [](auto& v) {
    decltype(v.size()) w = 0;
    for (decltype(v.size()) r = 0; r < v.size(); ++r) {
      if (std::find(v.begin(), v.begin() + w, v[r]) == v.begin() + w) v[w++] = v[r];
    }
    v.resize(w);
  };
  dedupe(out.defines);
  dedupe(out.include_dirs);
  dedupe(out.flags);
  return out;
}

std::vector<std::string> canonical_flags(const CompileOptions& options, const Arch& resolved) {
  return compile::marshal(normalized(options), resolved);
}

std::vector<std::string> compile::marshal(const CompileOptions& o, const Arch& resolved) {
  if (resolved.is_native()) {
    throw UsageError("marshalling compile options: the arch must be resolved before marshalling (native given)");
  }
  std::vector<std::string> out;
  out.push_back("--gpu-architecture=" + resolved.str());
  out.push_back("--std=" + o.std);
  if (o.fast_math) out.emplace_back("--use_fast_math");
  if (o.line_info) out.emplace_back("--generate-line-info");
  if (o.device_debug) out.emplace_back("--device-debug");
  if (o.max_registers > 0) out.push_back(fmt::format("--maxrregcount={}", o.max_registers));
  for (const auto& d : o.defines) out.push_back("--define-macro=" + d);
  for (const auto& dir : o.include_dirs) out.push_back("--include-path=" + dir.string());
  for (const auto& f : o.flags) out.push_back(f);
  return out;
}

}  // namespace kjit
