// The tables behind normalized()'s reading of raw flags: NVRTC 13's options, nvcc's host-only
// flags, -gencode / -code targets, and the closest known option. Checked against libnvrtc 13.0
// (each NVRTC spelling here is one it accepts; docs/nvcc-flags.md lists what kjit does).
#include "core/compile/options/nvcc_flags.hpp"

#include "core/base/edit_distance.hpp"

#include <kjit/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>

namespace kjit::compile {
namespace {

using V = OptionValue;

// NVRTC 13.0's options (its documented list, and what libnvrtc 13.0 accepts). The ones kjit models
// with a typed field or translates are here too: their names are candidates for closest_option.
constexpr std::array k_nvrtc_options = {
    NvrtcOption{"--gpu-architecture", "-arch", V::required},
    NvrtcOption{"--device-c", "-dc", V::none},
    NvrtcOption{"--device-w", "-dw", V::none},
    NvrtcOption{"--relocatable-device-code", "-rdc", V::boolean},
    NvrtcOption{"--extensible-whole-program", "-ewp", V::none},
    NvrtcOption{"--device-debug", "-G", V::none},
    NvrtcOption{"--generate-line-info", "-lineinfo", V::none},
    NvrtcOption{"--no-lineinfo-inlined-at", "-no-lineinfo-ia", V::none},
    NvrtcOption{"--dopt", "-dopt", V::required},
    NvrtcOption{"--Ofast-compile", "-Ofc", V::required},
    NvrtcOption{"--ptxas-options", "-Xptxas", V::required},
    NvrtcOption{"--maxrregcount", "-maxrregcount", V::required},
    NvrtcOption{"--ftz", "-ftz", V::boolean},
    NvrtcOption{"--prec-sqrt", "-prec-sqrt", V::boolean},
    NvrtcOption{"--prec-div", "-prec-div", V::boolean},
    NvrtcOption{"--fmad", "-fmad", V::boolean},
    NvrtcOption{"--use_fast_math", "-use_fast_math", V::none},
    NvrtcOption{"--extra-device-vectorization", "-extra-device-vectorization", V::none},
    NvrtcOption{"--fassociative-math", "", V::none},
    NvrtcOption{"--dlink-time-opt", "-dlto", V::none},
    NvrtcOption{"--gen-opt-lto", "-gen-opt-lto", V::none},
    NvrtcOption{"--optix-ir", "-optix-ir", V::none},
    NvrtcOption{"--jump-table-density", "-jtd", V::required},
    NvrtcOption{"--device-stack-protector", "-device-stack-protector", V::boolean},
    NvrtcOption{"--define-macro", "-D", V::required},
    NvrtcOption{"--undefine-macro", "-U", V::required},
    NvrtcOption{"--include-path", "-I", V::required},
    NvrtcOption{"--pre-include", "-include", V::required},
    NvrtcOption{"--no-source-include", "-no-source-include", V::none},
    NvrtcOption{"--std", "-std", V::required},
    NvrtcOption{"--builtin-move-forward", "-builtin-move-forward", V::boolean},
    NvrtcOption{"--builtin-initializer-list", "-builtin-initializer-list", V::boolean},
    NvrtcOption{"--disable-warnings", "-w", V::none},
    NvrtcOption{"--restrict", "-restrict", V::none},
    NvrtcOption{"--device-as-default-execution-space", "-default-device", V::none},
    NvrtcOption{"--device-int128", "-device-int128", V::none},
    NvrtcOption{"--device-float128", "-device-float128", V::none},
    NvrtcOption{"--optimization-info", "-opt-info", V::required},
    NvrtcOption{"--display-error-number", "-err-no", V::none},
    NvrtcOption{"--no-display-error-number", "-no-err-no", V::none},
    NvrtcOption{"--diag-error", "-diag-error", V::required},
    NvrtcOption{"--diag-suppress", "-diag-suppress", V::required},
    NvrtcOption{"--diag-warn", "-diag-warn", V::required},
    NvrtcOption{"--brief-diagnostics", "-brief-diag", V::boolean},
    NvrtcOption{"--time", "-time", V::required},
    NvrtcOption{"--split-compile", "-split-compile", V::required},
    NvrtcOption{"--fdevice-syntax-only", "-fdevice-syntax-only", V::none},
    NvrtcOption{"--minimal", "-minimal", V::none},
    NvrtcOption{"--fdevice-time-trace", "-fdevice-time-trace", V::required},
    NvrtcOption{"--pch", "-pch", V::none},
    NvrtcOption{"--create-pch", "-create-pch", V::required},
    NvrtcOption{"--use-pch", "-use-pch", V::required},
    NvrtcOption{"--pch-dir", "-pch-dir", V::required},
    NvrtcOption{"--pch-verbose", "-pch-verbose", V::boolean},
    NvrtcOption{"--pch-messages", "-pch-messages", V::boolean},
    NvrtcOption{"--instantiate-templates-in-pch", "-instantiate-templates-in-pch", V::boolean},
    NvrtcOption{"--frandom-seed", "-frandom-seed", V::required},
    NvrtcOption{"--modify-stack-limit", "-modify-stack-limit", V::boolean},
    NvrtcOption{"--version-ident", "-dQ", V::boolean},
    NvrtcOption{"--discard-value-names", "-discard-value-names", V::boolean},
    NvrtcOption{"--cuda-api-version", "", V::required},
    NvrtcOption{"--no-cache", "", V::none},
    NvrtcOption{"", "-Xcudafe", V::required},
    NvrtcOption{"", "-Xnvvm", V::required},
};

// nvcc spellings kjit translates (normalized() has the translations): candidates for closest_option.
constexpr std::array<std::string_view, 14> k_nvcc_translated = {
    "--expt-relaxed-constexpr", "--expt-extended-lambda", "--extended-lambda", "--generate-code", "-gencode",
    "--gpu-code", "-code", "--resource-usage", "-res-usage", "--system-include", "-isystem", "--optimize",
    "--debug", "-g"};

constexpr std::array k_host_only = {
    HostOnlyFlag{"-Xcompiler", "--compiler-options", V::required, "passes options to the host compiler"},
    HostOnlyFlag{"-Xlinker", "--linker-options", V::required, "passes options to the host linker"},
    HostOnlyFlag{"-Xarchive", "--archive-options", V::required, "passes options to the library manager"},
    HostOnlyFlag{"-Xnvlink", "--nvlink-options", V::required,
                 "passes options to nvlink (kjit links with nvJitLink: kjit::Link, kjit compile --link)"},
    HostOnlyFlag{"-Xfatbin", "--fatbin-options", V::required, "passes options to fatbinary"},
    HostOnlyFlag{"-ccbin", "--compiler-bindir", V::required, "chooses the host compiler"},
    HostOnlyFlag{"-default-stream", "--default-stream", V::required, "sets the host code's default stream"},
    HostOnlyFlag{"-cudart", "--cudart", V::required, "chooses the CUDA runtime library to link"},
    HostOnlyFlag{"-cudadevrt", "--cudadevrt", V::required, "chooses the device runtime library to link"},
    HostOnlyFlag{"-m64", "", V::none, "sets the host's address size (device code is 64-bit)"},
    HostOnlyFlag{"-m32", "", V::none, "sets the host's address size (device code is 64-bit)"},
    HostOnlyFlag{"-machine", "--machine", V::required, "sets the host's address size (device code is 64-bit)"},
    HostOnlyFlag{"-shared", "--shared", V::none, "links a shared library"},
    HostOnlyFlag{"-c", "--compile", V::none, "compiles to an object file without linking"},
    HostOnlyFlag{"-o", "--output-file", V::required,
                 "names nvcc's output file (kjit compile -o DIR writes the outputs)"},
    HostOnlyFlag{"-x", "--x", V::required, "sets the input language"},
    HostOnlyFlag{"-lib", "--lib", V::none, "makes a static library"},
    HostOnlyFlag{"-link", "--link", V::none, "links an executable"},
    HostOnlyFlag{"-dlink", "--device-link", V::none,
                 "runs the device link step (kjit links with nvJitLink: kjit::Link, kjit compile --link)"},
    HostOnlyFlag{"-run", "--run", V::none, "runs the executable it built"},
    HostOnlyFlag{"-keep", "--keep", V::none, "keeps nvcc's intermediate files"},
    HostOnlyFlag{"-keep-dir", "--keep-dir", V::required, "keeps nvcc's intermediate files"},
    HostOnlyFlag{"-v", "--verbose", V::none, "lists the commands nvcc runs"},
    HostOnlyFlag{"-dryrun", "--dryrun", V::none, "lists the commands nvcc would run"},
    HostOnlyFlag{"-t", "--threads", V::required, "sets how many threads compile nvcc's archs"},
    HostOnlyFlag{"-M", "--generate-dependencies", V::none, "writes make dependencies"},
    HostOnlyFlag{"-MM", "--generate-nonsystem-dependencies", V::none, "writes make dependencies"},
    HostOnlyFlag{"-MD", "--generate-dependencies-with-compile", V::none, "writes make dependencies"},
    HostOnlyFlag{"-MMD", "--generate-nonsystem-dependencies-with-compile", V::none, "writes make dependencies"},
    HostOnlyFlag{"-MP", "--generate-dependency-targets", V::none, "writes make dependencies"},
    HostOnlyFlag{"-MF", "--dependency-output", V::required, "writes make dependencies"},
    HostOnlyFlag{"-MT", "--dependency-target-name", V::required, "writes make dependencies"},
    HostOnlyFlag{"-allow-unsupported-compiler", "--allow-unsupported-compiler", V::none,
                 "accepts an unsupported host compiler"},
    HostOnlyFlag{"-forward-unknown-to-host-compiler", "--forward-unknown-to-host-compiler", V::none,
                 "forwards unknown flags to the host compiler"},
    HostOnlyFlag{"-forward-unknown-to-host-linker", "--forward-unknown-to-host-linker", V::none,
                 "forwards unknown flags to the host linker"},
    HostOnlyFlag{"-use-local-env", "--use-local-env", V::none, "reuses the host compiler's environment"},
    HostOnlyFlag{"-static-global-template-stub", "--static-global-template-stub", V::boolean,
                 "chooses how host stubs of kernel templates are linked"},
    HostOnlyFlag{"-cubin", "--cubin", V::none,
                 "chooses the output kind (kjit makes PTX, and a cubin for sm_XX; kjit compile --emit chooses)"},
    HostOnlyFlag{"-ptx", "--ptx", V::none,
                 "chooses the output kind (kjit makes PTX, and a cubin for sm_XX; kjit compile --emit chooses)"},
    HostOnlyFlag{"-fatbin", "--fatbin", V::none,
                 "chooses the output kind (kjit makes PTX, and a cubin for sm_XX; kjit compile --emit chooses)"},
    HostOnlyFlag{"-src-in-ptx", "--source-in-ptx", V::none,
                 "interleaves the source in the PTX, which NVRTC cannot do (-lineinfo keeps line numbers)"},
    HostOnlyFlag{"-Werror", "--Werror", V::optional,
                 "turns nvcc's warnings into errors; NVRTC has no such option (--diag-error=N does it for one "
                 "diagnostic)"},
    HostOnlyFlag{"-library", "--library", V::required, "names a library to link"},
    HostOnlyFlag{"-library-path", "--library-path", V::required, "names a folder of libraries to link"},
};

// Prefix forms: -lcublas, -L/usr/lib, -Wall.
constexpr std::array k_host_only_prefixes = {
    HostOnlyFlag{"-l", "", V::none, "names a library to link"},
    HostOnlyFlag{"-L", "", V::none, "names a folder of libraries to link"},
    HostOnlyFlag{"-W", "", V::none,
                 "sets host compiler or nvcc warnings; NVRTC has no -W options (--diag-warn/--diag-error/"
                 "--diag-suppress=N for one diagnostic, -w for none)"},
};

std::string_view strip_dashes(std::string_view s) {
  while (!s.empty() && s.front() == '-') s.remove_prefix(1);
  return s;
}

// Brackets and quotes around a list: [sm_90,compute_90], "sm_90,compute_90", 'sm_90'.
std::string unwrap(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != '[' && c != ']' && c != '"' && c != '\'') out += c;
  }
  return out;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t end = s.find(sep, start);
    if (end == std::string_view::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// '-' and '_' are one character to a flag's name (--diag-suppress, --diag_suppress).
std::string dashes_as_underscores(std::string_view s) {
  std::string out(s);
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

GpuTarget read_target(std::string_view text, std::string_view flag) {
  auto fail = [&] {
    return UsageError(fmt::format("reading compile flag \"{}\": \"{}\" is not an arch (expected sm_XX, compute_XX "
                                  "or lto_XX, as in arch=compute_90,code=sm_90)",
                                  flag, text));
  };
  if (text == "all" || text == "all-major") {
    throw UsageError(fmt::format("reading compile flag \"{}\": it asks for every arch, and kjit compiles one arch per "
                                 "request: compile once per arch (--arch sm_90), or warm the cache for several with "
                                 "kjit warm --arch LIST (e.g. --arch sm_80,sm_90)",
                                 flag));
  }
  if (text == "native") return GpuTarget{Arch::native()};
  if (text.substr(0, 4) == "lto_") {
    try {
      return GpuTarget{Arch::parse("sm_" + std::string(text.substr(4))), true};
    } catch (const UsageError&) {
      throw fail();
    }
  }
  if (text.substr(0, 3) != "sm_" && text.substr(0, 8) != "compute_") throw fail();
  try {
    return GpuTarget{Arch::parse(text)};
  } catch (const UsageError&) {
    throw fail();
  }
}

}  // namespace

FoundNvrtcOption find_nvrtc_option(std::string_view name) {
  for (const NvrtcOption& o : k_nvrtc_options) {
    if ((!o.name.empty() && o.name == name) || (!o.short_name.empty() && o.short_name == name)) return {&o};
  }
  const std::string_view bare = strip_dashes(name);
  if (bare.empty()) return {};
  for (const NvrtcOption& o : k_nvrtc_options) {
    if ((!o.name.empty() && strip_dashes(o.name) == bare) || (!o.short_name.empty() && strip_dashes(o.short_name) == bare)) {
      return {&o, NameMatch::other_dashes};
    }
  }
  return {};
}

const HostOnlyFlag* find_host_only_flag(std::string_view name) {
  for (const HostOnlyFlag& h : k_host_only) {
    if (h.name == name || (!h.other_name.empty() && h.other_name == name)) return &h;
  }
  for (const HostOnlyFlag& h : k_host_only_prefixes) {
    if (name.size() > h.name.size() && name.substr(0, h.name.size()) == h.name) return &h;
  }
  return nullptr;
}

std::vector<GpuTarget> code_targets(std::string_view list, std::string_view flag) {
  std::vector<GpuTarget> out;
  const std::string plain = unwrap(list);
  for (std::string_view item : split(plain, ',')) out.push_back(read_target(item, flag));
  if (out.empty()) {
    throw UsageError(fmt::format("reading compile flag \"{}\": it names no arch (expected e.g. sm_90)", flag));
  }
  return out;
}

std::vector<GpuTarget> gencode_targets(std::string_view value, std::string_view flag) {
  // "arch=compute_90,code=[sm_90,compute_90]": an item without '=' continues the key before it.
  const std::string plain = unwrap(value);
  std::vector<GpuTarget> arch;
  std::vector<GpuTarget> code;
  std::vector<GpuTarget>* current = nullptr;
  for (std::string_view item : split(plain, ',')) {
    const std::size_t eq = item.find('=');
    if (eq != std::string_view::npos) {
      const std::string_view key = item.substr(0, eq);
      if (key == "arch") {
        current = &arch;
      } else if (key == "code") {
        current = &code;
      } else {
        throw UsageError(fmt::format("reading compile flag \"{}\": \"{}\" is neither arch= nor code= (expected "
                                     "arch=compute_90,code=sm_90)",
                                     flag, key));
      }
      item = item.substr(eq + 1);
    }
    if (current == nullptr) {
      throw UsageError(fmt::format("reading compile flag \"{}\": expected arch=compute_XX,code=sm_XX", flag));
    }
    current->push_back(read_target(item, flag));
  }
  if (!code.empty()) return code;
  if (!arch.empty()) return arch;
  throw UsageError(fmt::format("reading compile flag \"{}\": it names no arch (expected arch=compute_90,code=sm_90)", flag));
}

std::string closest_option(std::string_view flag) {
  std::string_view name = flag.substr(0, flag.find('='));
  const std::string_view bare = strip_dashes(name);
  std::size_t best = std::string::npos;
  std::string answer;
  auto consider = [&](std::string_view candidate, std::string shown) {
    if (candidate.empty()) return;
    const std::size_t d = base::edit_distance(dashes_as_underscores(bare), dashes_as_underscores(strip_dashes(candidate)));
    if (d < best) {
      best = d;
      answer = std::move(shown);
    }
  };
  for (const NvrtcOption& o : k_nvrtc_options) {
    std::string shown = o.name.empty() ? std::string(o.short_name)
                        : o.short_name.empty() ? std::string(o.name)
                                               : fmt::format("{} ({})", o.name, o.short_name);
    consider(o.name, shown);
    consider(o.short_name, shown);
  }
  for (std::string_view n : k_nvcc_translated) consider(n, std::string(n));
  return answer;
}

}  // namespace kjit::compile
