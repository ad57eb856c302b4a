// Arch parsing, the reading of raw flags (kjit's typed fields, nvcc's spellings translated or
// dropped, NVRTC's options passed, anything else refused) and the one canonical marshalling of
// CompileOptions to NVRTC arguments.
#include <kjit/compile_options.hpp>
#include <kjit/error.hpp>

#include "core/compile/options/nvcc_flags.hpp"
#include "core/compile/options/option_fields.hpp"
#include "core/compile/options/option_marshalling.hpp"
#include "core/compile/nvrtc/nvrtc_info.hpp"
#include "core/compile/headers/standard_headers.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <type_traits>

namespace kjit {
namespace {

bool has_prefix(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// "90" or "90a": number and suffix.
bool parse_arch_number(std::string_view text, int& number, std::string& suffix) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, number);
  if (ec != std::errc() || ptr == text.data() || number < 10 || number > 1999) return false;
  suffix.assign(ptr, end);
  return suffix.empty() || suffix == "a" || suffix == "f";
}

// Value of "--name=value" / "-name=value" / "-name value" forms; advances i for the last.
template <typename Names>
bool take_value(const std::vector<std::string>& flags, std::size_t& i, const Names& names, std::string& value) {
  std::string_view f = flags[i];
  for (std::string_view name : names) {
    if (name.empty()) continue;
    if (f == name) {
      if (i + 1 >= flags.size()) {
        throw UsageError(fmt::format("reading compile flag \"{}\": it needs a value", f));
      }
      value = flags[++i];
      return true;
    }
    if (has_prefix(f, name) && f.size() > name.size() && f[name.size()] == '=') {
      value = std::string(f.substr(name.size() + 1));
      return true;
    }
  }
  return false;
}

bool take_value(const std::vector<std::string>& flags, std::size_t& i, std::initializer_list<std::string_view> names,
                std::string& value) {
  return take_value<std::initializer_list<std::string_view>>(flags, i, names, value);
}

// A flag of a typed field, read into it as its row says (compile::k_option_fields): a flag row's
// names set it to the opposite of its default (-lineinfo: true, --no-nvcc-environment: false); a
// value row's take a value ("-std=c++20", "-std c++20"), a list row's also joined ("-DN=4").
// The arch (-arch, -code, -gencode agree on one) and the raw flags are read apart.
bool typed_flag(const std::vector<std::string>& flags, std::size_t& i, CompileOptions& out) {
  const std::string_view f = flags[i];
  bool taken = false;
  compile::for_each_option_field([&](const auto& field) {
    if (taken) return;
    auto& member = out.*field.member;
    using T = std::decay_t<decltype(member)>;
    const CompileOptionField& row = field.row;
    if constexpr (std::is_same_v<T, bool>) {
      for (std::string_view name : row.raw_flags) {
        if (!name.empty() && f == name) {
          member = !(CompileOptions{}.*field.member);
          taken = true;
        }
      }
    } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, int> ||
                         std::is_same_v<T, std::vector<std::filesystem::path>> ||
                         std::is_same_v<T, std::vector<std::string>>) {
      if (row.kind == CompileOptionKind::raw_flags) return;
      std::string value;
      if (take_value(flags, i, row.raw_flags, value)) {
        taken = true;
      } else if (!row.raw_prefix.empty() && has_prefix(f, row.raw_prefix) && f.size() > row.raw_prefix.size()) {
        value = std::string(f.substr(row.raw_prefix.size()));
        taken = true;
      }
      if (!taken) return;
      if constexpr (std::is_same_v<T, int>) {
        int n = 0;
        auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
        if (ec != std::errc() || p != value.data() + value.size() || n < row.min || n > row.max) {
          throw UsageError(fmt::format("reading compile flag {}=\"{}\": expected a number from {} to {} ({})",
                                       row.raw_flags[0].substr(1), value, row.min, row.max, row.doc));
        }
        member = n;
      } else if constexpr (std::is_same_v<T, std::string>) {
        member = std::move(value);
      } else {
        member.emplace_back(std::move(value));
      }
    }
  });
  return taken;
}

// "true" or "false", as NVRTC and nvcc spell a boolean option's value.
bool boolean_value(std::string_view flag, std::string_view value) {
  if (value == "true") return true;
  if (value == "false") return false;
  throw UsageError(fmt::format("reading compile flag \"{}\": it takes true or false, not \"{}\"", flag, value));
}

// The flag as the user wrote it, for messages: "-arch=sm_90" or "-arch sm_90".
std::string joined(std::string_view flag, std::string_view value) {
  if (flag.find('=') != std::string_view::npos) return std::string(flag);
  return fmt::format("{} {}", flag, value);
}

std::vector<std::string_view> split_commas(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t end = s.find(',', start);
    if (end == std::string_view::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// nvcc's -O0..-O3, -O, --optimize N / --optimize=N (advances i past a separate value).
std::optional<int> optimization_level(const std::vector<std::string>& flags, std::size_t& i) {
  std::string_view f = flags[i];
  if (f == "-O") return 1;
  if (f.size() == 3 && f.substr(0, 2) == "-O" && f[2] >= '0' && f[2] <= '3') return f[2] - '0';
  std::string value;
  if (f == "--optimize" || f == "-optimize") {
    if (i + 1 >= flags.size()) throw UsageError(fmt::format("reading compile flag \"{}\": it needs a level", f));
    value = flags[++i];
  } else if (has_prefix(f, "--optimize=")) {
    value = std::string(f.substr(11));
  } else {
    return std::nullopt;
  }
  if (value.size() != 1 || value[0] < '0' || value[0] > '3') {
    throw UsageError(fmt::format("reading compile flag \"{}\": the level is 0, 1, 2 or 3, not \"{}\"", f, value));
  }
  return value[0] - '0';
}

// The archs that -arch, -code and -gencode ask for. Under nvcc -code replaces -arch's targets
// (-arch=compute_80 -code=sm_90 is sm_90); -gencode adds its own. kjit compiles one arch per
// request: the targets must agree on one (sm_90 and compute_90 are sm_90, which has both).
struct ArchFlags {
  struct Named {
    compile::GpuTarget target;
    std::string flag;
  };
  std::vector<Named> arch, code, gencode;

  static void add(std::vector<Named>& to, const std::vector<compile::GpuTarget>& targets, const std::string& flag) {
    for (const auto& t : targets) to.push_back({t, flag});
  }

  void apply(CompileOptions& out) const {
    std::vector<Named> all = code.empty() ? arch : code;
    all.insert(all.end(), gencode.begin(), gencode.end());
    if (all.empty()) return;
    std::vector<Named> groups;
    bool lto = false;
    for (const Named& n : all) {
      lto = lto || n.target.lto;
      const Arch& a = n.target.arch;
      auto same = std::find_if(groups.begin(), groups.end(), [&](const Named& g) {
        const Arch& b = g.target.arch;
        return a.is_native() == b.is_native() && a.number() == b.number() && a.suffix() == b.suffix();
      });
      if (same == groups.end()) {
        groups.push_back(n);
      } else if (a.is_real() && !same->target.arch.is_real()) {
        same->target.arch = a;  // sm_90 makes compute_90's PTX too
      }
    }
    if (groups.size() > 1) {
      std::vector<std::string> named;
      std::vector<std::string> names;
      for (const Named& g : groups) {
        named.push_back(fmt::format("{} (\"{}\")", g.target.arch.str(), g.flag));
        names.push_back(g.target.arch.str());
      }
      throw UsageError(fmt::format(
          "reading compile flags: they ask for {} archs, {}, and kjit compiles one arch per request: compile once "
          "per arch (--arch {}), or warm the cache for all of them with kjit warm --arch {}",
          groups.size(), fmt::join(named, ", "), fmt::join(names, ", then --arch "), fmt::join(names, ",")));
    }
    const Named& asked = groups.front();
    const Arch& typed = out.arch;  // CompileOptions::arch (kjit's --arch); native: the flags choose
    if (!typed.is_native() &&
        (typed.number() != asked.target.arch.number() || typed.suffix() != asked.target.arch.suffix())) {
      throw UsageError(fmt::format(
          "reading compile flags: \"{}\" asks for {}, and the options' arch (the CLI's --arch, Python's arch=, "
          "C++'s CompileOptions::arch) is {}; kjit compiles one arch per request: name it once ({} there, or \"{}\" "
          "alone)",
          asked.flag, asked.target.arch.str(), typed.str(), typed.str(), asked.flag));
    }
    // sm_90 and compute_90 agree: the real one, which makes both.
    if (typed.is_native() || !typed.is_real()) out.arch = asked.target.arch;
    if (lto) out.flags.emplace_back("-dlto");
  }
};

// A flag no typed field or translation took: an NVRTC option passes (its value joined with
// '=', its name in NVRTC's spelling), an nvcc host-only flag is dropped, anything else is refused.
// `respelled`: a name was written in NVRTC's spelling, which normalized() then reads once more
// (--dlink-time-opt is kjit's -dlto): normalizing stays idempotent.
template <typename Drop>
void pass_or_drop(const std::vector<std::string>& flags, std::size_t& i, CompileOptions& out, Drop& drop,
                  bool& respelled) {
  const std::string_view f = flags[i];
  if (f.front() != '-') {
    throw UsageError(fmt::format("reading compile flag \"{}\": it is not a flag, and no flag before it takes a value "
                                 "(the closest option is {})",
                                 f, compile::closest_option(f)));
  }
  const std::size_t eq = f.find('=');
  const std::string_view name = f.substr(0, eq);
  const bool next_is_boolean = i + 1 < flags.size() && (flags[i + 1] == "true" || flags[i + 1] == "false");
  if (auto found = compile::find_nvrtc_option(name); found.option != nullptr) {
    const compile::NvrtcOption& o = *found.option;
    const std::string spelled(found.match == compile::NameMatch::exact ? name
                              : o.name.empty()                         ? o.short_name
                                                                       : o.name);
    respelled = respelled || found.match != compile::NameMatch::exact;
    if (eq != std::string_view::npos) {
      out.flags.push_back(spelled + std::string(f.substr(eq)));
    } else if (o.value == compile::OptionValue::required) {
      if (i + 1 >= flags.size()) throw UsageError(fmt::format("reading compile flag \"{}\": it needs a value", f));
      out.flags.push_back(spelled + "=" + flags[++i]);
    } else if (o.value == compile::OptionValue::boolean) {
      if (!next_is_boolean) throw UsageError(fmt::format("reading compile flag \"{}\": it needs true or false", f));
      out.flags.push_back(spelled + "=" + flags[++i]);
    } else {
      out.flags.push_back(spelled);
    }
    return;
  }
  if (const compile::HostOnlyFlag* h = compile::find_host_only_flag(name)) {
    std::string text(f);
    if (eq == std::string_view::npos && i + 1 < flags.size()) {
      const bool takes = h->value == compile::OptionValue::required ||
                         (h->value == compile::OptionValue::boolean && next_is_boolean) ||
                         (h->value == compile::OptionValue::optional && !has_prefix(flags[i + 1], "-"));
      if (takes) text += " " + flags[++i];
    }
    const bool says_nvrtc = h->why.find("NVRTC") != std::string_view::npos;
    drop(std::move(text), fmt::format("under nvcc it {}{}", h->why, says_nvrtc ? "" : ", and kjit compiles device code only"));
    return;
  }
  throw UsageError(fmt::format("reading compile flag \"{}\": neither NVRTC nor nvcc has it; the closest option is {} "
                               "(docs/nvcc-flags.md lists the nvcc flags kjit translates or drops)",
                               f, compile::closest_option(f)));
}

}  // namespace

Arch Arch::parse(std::string_view text) {
  int number = 0;
  std::string suffix;
  Arch result = native();
  if (text == "native") return native();
  if (has_prefix(text, "sm_") && parse_arch_number(text.substr(3), number, suffix)) {
    result = sm(number);
  } else if (has_prefix(text, "compute_") && parse_arch_number(text.substr(8), number, suffix)) {
    result = compute(number);
  } else if (parse_arch_number(text, number, suffix)) {
    result = sm(number);
  } else {
    // "sm90", "SM_90", "compute90", "sm-90": the arch meant, spelled as NVRTC takes it.
    std::string meant;
    for (std::string_view prefix : {"sm", "compute"}) {
      std::string lower;
      for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (!has_prefix(lower, prefix)) continue;
      std::string_view rest = std::string_view(lower).substr(prefix.size());
      if (!rest.empty() && (rest.front() == '_' || rest.front() == '-')) rest.remove_prefix(1);
      if (parse_arch_number(rest, number, suffix)) meant = fmt::format("{}_{}", prefix, rest);
    }
    throw UsageError(fmt::format("reading arch \"{}\": expected native, sm_XX, sm_XXa, compute_XX or XX{}", text,
                                 meant.empty() ? "" : fmt::format(" (did you mean {}?)", meant)));
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

CompileOptions normalized(const CompileOptions& options, std::vector<std::string>* dropped) {
  CompileOptions out = options;
  out.flags.clear();
  const auto& flags = options.flags;
  ArchFlags archs;
  bool respelled = false;
  auto drop = [&](std::string text, std::string_view why) {
    if (dropped == nullptr) return;
    std::string message = fmt::format("dropping compile flag \"{}\": {} (docs/nvcc-flags.md)", text, why);
    if (std::find(dropped->begin(), dropped->end(), message) == dropped->end()) dropped->push_back(std::move(message));
  };
  for (std::size_t i = 0; i < flags.size(); ++i) {
    std::string_view f = flags[i];
    std::string value;
    if (f.empty()) continue;
    if (typed_flag(flags, i, out)) {
      // a flag of a typed field (its row's raw_flags or raw_prefix): CompileOptions::fast_math, ...
    } else if (f == "--restrict" || f == "-restrict") {
      // NVRTC 13.0 keeps --restrict on for every later compile in the process: a program
      // compiled after it, under its own options and cache key, would get restrict semantics.
      throw UsageError(fmt::format(
          "reading compile flag \"{}\": NVRTC {} keeps it on for every later compile in this process (other "
          "programs, other cache keys), so kjit does not pass it; write __restrict__ on the kernel's pointer "
          "parameters instead",
          f, compile::NvrtcInfo::version()));
    } else if (f == "-dc" || f == "--device-c") {
      out.flags.emplace_back("-rdc=true");  // one spelling: one key (a Link adds it too)
    } else if (take_value(flags, i, {"-rdc", "--relocatable-device-code"}, value)) {
      if (boolean_value(f, value)) out.flags.emplace_back("-rdc=true");  // false: the default
    } else if (f == "-dlto" || f == "--dlink-time-opt") {
      out.flags.emplace_back("-dlto");
    } else if (auto level = optimization_level(flags, i)) {
      // Under nvcc, -O is the host compiler's level: device code is optimized whatever it says.
      if (*level == 0) {
        drop("-O0", "under nvcc -O sets the host compiler's optimization only, and device code stays optimized "
                    "(as nvcc leaves it); for unoptimized device code with debug info use -G (--device-debug), "
                    "for ptxas without optimization -Xptxas -O0");
      }
    } else if (f == "-g" || f == "--debug") {
      drop(std::string(f), "under nvcc it asks for host debug info, and device code gets none from it; for device "
                           "debug info use -G (--device-debug), for line numbers in profiles -lineinfo");
    } else if (f == "--expt-relaxed-constexpr" || f == "-expt-relaxed-constexpr") {
      out.flags.emplace_back("-Xcudafe=--relaxed_constexpr");  // NVRTC 13 has no spelling of its own
    } else if (f == "--expt-extended-lambda" || f == "-expt-extended-lambda" || f == "--extended-lambda" ||
               f == "-extended-lambda") {
      out.flags.emplace_back("-Xcudafe=--extended-lambda");
    } else if (f == "-res-usage" || f == "--resource-usage") {
      out.flags.emplace_back("--ptxas-options=-v");
    } else if (take_value(flags, i, {"-Xptxas", "--ptxas-options"}, value)) {
      // nvcc splits the value at commas ("-v,-warn-spills"); NVRTC hands it to ptxas whole.
      for (std::string_view item : split_commas(value)) {
        out.flags.push_back("--ptxas-options=" + std::string(item == "--verbose" ? "-v" : item));
      }
    } else if (take_value(flags, i, {"-Xcudafe"}, value)) {
      out.flags.push_back("-Xcudafe=" + value);
    } else if (take_value(flags, i, {"-ftz", "--ftz"}, value)) {
      out.flags.push_back(std::string("--ftz=") + (boolean_value(f, value) ? "true" : "false"));
    } else if (take_value(flags, i, {"-prec-div", "--prec-div"}, value)) {
      out.flags.push_back(std::string("--prec-div=") + (boolean_value(f, value) ? "true" : "false"));
    } else if (take_value(flags, i, {"-prec-sqrt", "--prec-sqrt"}, value)) {
      out.flags.push_back(std::string("--prec-sqrt=") + (boolean_value(f, value) ? "true" : "false"));
    } else if (take_value(flags, i, {"-fmad", "--fmad"}, value)) {
      out.flags.push_back(std::string("--fmad=") + (boolean_value(f, value) ? "true" : "false"));
    } else if (take_value(flags, i, {"-arch", "--gpu-architecture"}, value)) {
      archs.add(archs.arch, compile::code_targets(value, joined(f, value)), joined(f, value));
    } else if (take_value(flags, i, {"-code", "--gpu-code"}, value)) {
      archs.add(archs.code, compile::code_targets(value, joined(f, value)), joined(f, value));
    } else if (take_value(flags, i, {"-gencode", "--generate-code"}, value)) {
      archs.add(archs.gencode, compile::gencode_targets(value, joined(f, value)), joined(f, value));
    } else if (has_prefix(f, "-U") && f.size() > 2 && f.find('=') == std::string_view::npos) {
      out.flags.emplace_back(f);  // NVRTC's -UNAME
    } else {
      pass_or_drop(flags, i, out, drop, respelled);
    }
  }
  archs.apply(out);
  if (respelled) return normalized(out);
  compile::for_each_option_field([&](const auto& field) {
    if constexpr (std::is_same_v<std::decay_t<decltype(out.*field.member)>, int>) {
      const int n = out.*field.member;
      if (n < field.row.min || n > field.row.max) {
        throw UsageError(fmt::format("reading CompileOptions::{} = {}: it takes {} to {} ({})", field.row.name, n,
                                     field.row.min, field.row.max, field.row.doc));
      }
    }
  });
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
  return compile::marshal(compile::normalize(options), resolved);
}

compile::NormalizedOptions compile::normalize(const CompileOptions& options, std::vector<std::string>* dropped) {
  return NormalizedOptions(normalized(options, dropped));
}

compile::NormalizedOptions compile::NormalizedOptions::relocatable(bool lto) const {
  CompileOptions o = m_options;
  // normalize() spells them so, once each, after the flags that came first.
  for (const char* f : {"-rdc=true", lto ? "-dlto" : nullptr}) {
    if (f != nullptr && std::find(o.flags.begin(), o.flags.end(), f) == o.flags.end()) o.flags.emplace_back(f);
  }
  return NormalizedOptions(std::move(o));
}

std::vector<std::string> compile::marshal(const NormalizedOptions& normalized_options, const Arch& resolved) {
  const CompileOptions& o = normalized_options.get();
  if (resolved.is_native()) {
    throw UsageError("marshalling compile options: the arch must be resolved before marshalling (native given)");
  }
  std::vector<std::string> out;
  // One option (or one a list item) per field, as its row spells it, in the table's order.
  compile::for_each_option_field([&](const auto& f) {
    const auto& v = o.*f.member;
    using T = std::decay_t<decltype(v)>;
    const std::string_view nvrtc = f.row.nvrtc;
    if constexpr (std::is_same_v<T, Arch>) {
      out.push_back(std::string(nvrtc) + resolved.str());
    } else if constexpr (std::is_same_v<T, std::string>) {
      out.push_back(std::string(nvrtc) + v);
    } else if constexpr (std::is_same_v<T, bool>) {
      if (v) out.emplace_back(nvrtc);
    } else if constexpr (std::is_same_v<T, int>) {
      if (v > 0) out.push_back(std::string(nvrtc) + std::to_string(v));
    } else if constexpr (std::is_same_v<T, std::vector<std::filesystem::path>>) {
      for (const auto& d : v) out.push_back(std::string(nvrtc) + d.string());
    } else {
      static_assert(std::is_same_v<T, std::vector<std::string>>);
      for (const auto& item : v) out.push_back(std::string(nvrtc) + item);
    }
  });
  return out;
}

}  // namespace kjit
