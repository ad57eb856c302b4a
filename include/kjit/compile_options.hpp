// kjit::Arch and kjit::CompileOptions: typed compile options. They are marshalled to NVRTC
// arguments in exactly one place (canonical_flags), and the cache key hashes that marshalled
// list, so two spellings of one request ("-use_fast_math" and fast_math = true, or nvcc's
// "-res-usage" and NVRTC's "--ptxas-options=-v") hit one entry.
// Arch::parse and canonical_flags throw kjit::UsageError for input they cannot understand.
#pragma once

#include <kjit/export.hpp>

#include <array>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kjit {

class KJIT_API Arch {
public:
  // The arch of the device a module is loaded on (resolved when compiling).
  static Arch native() { return Arch(Kind::native, 0); }
  // Real arch: cubin and PTX (sm_90 -> 90).
  static Arch sm(int number) { return Arch(Kind::real, number); }
  // Virtual arch: PTX only (compute_90).
  static Arch compute(int number) { return Arch(Kind::virtual_, number); }
  // "native", "sm_90", "sm_90a", "compute_90", "90". Throws UsageError otherwise.
  static Arch parse(std::string_view text);

  bool is_native() const noexcept { return m_kind == Kind::native; }
  bool is_virtual() const noexcept { return m_kind == Kind::virtual_; }
  bool is_real() const noexcept { return m_kind == Kind::real; }
  int number() const noexcept { return m_number; }
  // Arch-specific suffix ("a" in sm_90a, "f" in sm_100f), or empty.
  const std::string& suffix() const noexcept { return m_suffix; }
  // "native", "sm_90", "compute_90".
  std::string str() const;

  friend bool operator==(const Arch&, const Arch&) = default;

private:
  enum class Kind { native, real, virtual_ };
  Arch(Kind kind, int number) : m_kind(kind), m_number(number) {}
  Kind m_kind;
  int m_number;
  std::string m_suffix;
};

// The fields of CompileOptions are described once, in kjit's table of them (one row a field:
// compile_option_fields() below, docs/compile-options.md): marshalling, the cache key, the in-process
// request hash, Python's keywords, the manifest's keys and `kjit compile --help` all follow it.
struct CompileOptions {
  Arch arch = Arch::native();
  std::string std = "c++17";                       // --std=
  std::vector<std::string> defines;                 // "NAME" or "NAME=VALUE"
  std::vector<std::filesystem::path> include_dirs;  // user include dirs (toolkit dirs are added)
  bool fast_math = false;                           // --use_fast_math
  bool line_info = false;                           // --generate-line-info
  bool device_debug = false;                        // --device-debug (-G)
  int max_registers = 0;                            // --maxrregcount=N when > 0
  // What nvcc makes visible without an include (the math functions and their std:: forms, M_PI,
  // INFINITY, FLT_MAX, uint, ...): pre-included (--pre-include=__kjit_nvcc.h) unless off, or
  // "--no-nvcc-environment" in flags, for a bare NVRTC environment (docs/headers.md).
  bool nvcc_environment = true;
  std::vector<std::string> flags;                   // raw NVRTC or nvcc flags (docs/nvcc-flags.md)

  CompileOptions with_arch(Arch a) const {
    CompileOptions copy = *this;
    copy.arch = a;
    return copy;
  }
  CompileOptions with_flags(std::vector<std::string> more) const {
    CompileOptions copy = *this;
    copy.flags.insert(copy.flags.end(), more.begin(), more.end());
    return copy;
  }
};

// The one canonical NVRTC argument list for these options, with the arch resolved to
// `resolved` (which must not be native). Raw flags with a typed equivalent are folded into it
// ("-use_fast_math", "-DX", "-I dir", "-std=c++20", "-arch=sm_90", "-maxrregcount=32",
// "-lineinfo", "-G"). nvcc's spellings become NVRTC's, so both give one cache key
// ("--expt-relaxed-constexpr", "--extended-lambda", "-gencode arch=compute_90,code=sm_90",
// "-res-usage", "-ftz=true", "-dc"); nvcc's host options are dropped ("-O0".."-O3", "-g",
// "-Xcompiler ...", "-Wall", "-lcublas": Runtime logs one warning for each, except -O1..-O3,
// which change nothing nvcc does to device code either). NVRTC's other options pass unchanged.
// Throws UsageError for a flag neither NVRTC nor nvcc has (naming the closest option), a bad
// value, or flags asking for two archs. The table: docs/nvcc-flags.md.
// Toolkit include dirs are not part of it: they are added when compiling.
KJIT_API std::vector<std::string> canonical_flags(const CompileOptions& options, const Arch& resolved);

// How a field's value is written, read and marshalled.
enum class CompileOptionKind {
  arch,       // an Arch, written as Arch::parse reads it ("sm_90")
  text,       // a string passed as the NVRTC option's value (--std=c++17)
  text_list,  // strings, one NVRTC option each (--define-macro=N=4)
  path_list,  // folders, one NVRTC option each (--include-path=/inc)
  flag,       // a bool: the NVRTC option is passed when true
  count,      // an int in [min, max]: the NVRTC option with its value, when above 0
  raw_flags,  // NVRTC or nvcc flags, read by normalized() (docs/nvcc-flags.md)
};
KJIT_API std::string_view to_string(CompileOptionKind kind);

// One field of CompileOptions, as every part of kjit that names it spells it.
struct CompileOptionField {
  std::string_view name;         // the C++ member, and the Python keyword (kjit.compile(fast_math=True))
  CompileOptionKind kind;
  std::string_view nvrtc;        // the NVRTC option marshalled for it (a prefix where a value follows)
  std::string_view manifest;     // its key in a manifest's "options" and variants; empty: none
  std::string_view cli;          // its option of `kjit compile` itself; empty: none (flags after -- only)
  std::array<std::string_view, 6> raw_flags;  // the nvcc/NVRTC flags normalized() folds into it
  std::string_view raw_prefix;   // a flag joined with its value ("-DN=4"); empty: none
  std::string_view example;      // a value unlike the default, as a manifest or the docs write it
  std::string_view doc;          // one line
  int min = 0, max = 0;          // count: the values accepted
};

// The rows, in the order marshalling writes them (so in the order of the cache key's options).
KJIT_API std::span<const CompileOptionField> compile_option_fields();
// The row named `name`, or nullptr.
KJIT_API const CompileOptionField* find_compile_option(std::string_view name);

// A field's value by name, for bindings and readers that go through the table: bool (flag),
// int (count), std::string (arch as Arch::str(), text), or strings (lists, flags).
using CompileOptionValue = std::variant<bool, int, std::string, std::vector<std::string>>;
KJIT_API CompileOptionValue compile_option(const CompileOptions& options, std::string_view name);
// Sets the field named `name`. Throws UsageError naming the field for an unknown name, a value of
// another kind, a count outside [min, max], or an arch Arch::parse refuses.
KJIT_API void set_compile_option(CompileOptions& options, std::string_view name, const CompileOptionValue& value);

}  // namespace kjit
