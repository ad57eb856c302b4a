// kjit::compile::k_option_fields: the one table of CompileOptions' fields, each row the member it
// describes and its public description (kjit::CompileOptionField: NVRTC spelling, manifest key,
// CLI flags, doc line, range). Marshalling (and so the cache key), normalization's typed flags,
// the request hash, the manifest reader, set_compile_option (Python's keywords), `kjit compile
// --help` and docs/compile-options.md all walk it; none lists the fields again. A field added to
// CompileOptions without a row does not compile (the static_assert below counts the members).
// The rows are in marshalling order: the order of the cache key's options, which must not change
// for existing fields (every key would change with it).
#pragma once

#include <kjit/compile_options.hpp>

#include "core/compile/headers/standard_headers.hpp"

#include <array>
#include <cstddef>
#include <filesystem>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace kjit::compile {

// What CompileOptions::nvcc_environment marshals to: the header standard_headers.hpp holds.
inline constexpr std::string_view k_nvcc_environment_pre_include = "--pre-include=__kjit_nvcc.h";
static_assert(k_nvcc_environment_pre_include.substr(14) == k_nvcc_environment_header);

template <typename T>
struct OptionField {
  T CompileOptions::*member;
  CompileOptionField row;
};

// The kind a member's type has; a row that says another does not compile.
template <typename T>
constexpr CompileOptionKind kind_of_type();
template <>
constexpr CompileOptionKind kind_of_type<Arch>() { return CompileOptionKind::arch; }
template <>
constexpr CompileOptionKind kind_of_type<std::string>() { return CompileOptionKind::text; }
template <>
constexpr CompileOptionKind kind_of_type<std::vector<std::filesystem::path>>() { return CompileOptionKind::path_list; }
template <>
constexpr CompileOptionKind kind_of_type<bool>() { return CompileOptionKind::flag; }
template <>
constexpr CompileOptionKind kind_of_type<int>() { return CompileOptionKind::count; }
// std::vector<std::string>: text_list or raw_flags (checked apart).

inline constexpr std::tuple k_option_fields{
    OptionField<Arch>{&CompileOptions::arch,
                      {.name = "arch", .kind = CompileOptionKind::arch, .nvrtc = "--gpu-architecture=",
                       .manifest = "", .cli = "--arch", .raw_flags = {"-arch", "--gpu-architecture", "-code", "--gpu-code", "-gencode", "--generate-code"},
                       .example = "sm_80",
                       .doc = "the target: native (the device's), sm_XX (cubin and PTX) or compute_XX (PTX)"}},
    OptionField<std::string>{&CompileOptions::std,
                             {.name = "std", .kind = CompileOptionKind::text, .nvrtc = "--std=", .manifest = "std",
                              .raw_flags = {"-std", "--std"}, .example = "c++20",
                              .doc = "the C++ standard: c++03, c++11, c++14, c++17 (default) or c++20"}},
    OptionField<bool>{&CompileOptions::fast_math,
                      {.name = "fast_math", .kind = CompileOptionKind::flag, .nvrtc = "--use_fast_math",
                       .manifest = "fast_math", .raw_flags = {"-use_fast_math", "--use_fast_math"},
                       .example = "true", .doc = "fast, less precise math (flush denormals, approximate division)"}},
    OptionField<bool>{&CompileOptions::line_info,
                      {.name = "line_info", .kind = CompileOptionKind::flag, .nvrtc = "--generate-line-info",
                       .manifest = "line_info", .raw_flags = {"-lineinfo", "--generate-line-info"},
                       .example = "true", .doc = "source lines in the output, for profilers"}},
    OptionField<bool>{&CompileOptions::device_debug,
                      {.name = "device_debug", .kind = CompileOptionKind::flag, .nvrtc = "--device-debug",
                       .manifest = "device_debug", .raw_flags = {"-G", "--device-debug"}, .example = "true",
                       .doc = "device debug information, optimization off"}},
    OptionField<int>{&CompileOptions::max_registers,
                     {.name = "max_registers", .kind = CompileOptionKind::count, .nvrtc = "--maxrregcount=",
                      .manifest = "max_registers", .raw_flags = {"-maxrregcount", "--maxrregcount"},
                      .example = "32", .doc = "the most registers a thread may use; 0: no limit",
                      .min = 0, .max = 255}},
    OptionField<bool>{&CompileOptions::nvcc_environment,
                      {.name = "nvcc_environment", .kind = CompileOptionKind::flag,
                       .nvrtc = k_nvcc_environment_pre_include, .manifest = "nvcc_environment",
                       .raw_flags = {"--no-nvcc-environment"}, .example = "false",
                       .doc = "what nvcc declares without an include (math functions, M_PI, ...): on by default "
                              "(docs/headers.md)"}},
    OptionField<std::vector<std::string>>{&CompileOptions::defines,
                                          {.name = "defines", .kind = CompileOptionKind::text_list,
                                           .nvrtc = "--define-macro=", .manifest = "defines",
                                           .raw_flags = {"-D", "--define-macro"}, .raw_prefix = "-D",
                                           .example = "N=4", .doc = "macros: NAME or NAME=VALUE"}},
    OptionField<std::vector<std::filesystem::path>>{
        &CompileOptions::include_dirs,
        {.name = "include_dirs", .kind = CompileOptionKind::path_list, .nvrtc = "--include-path=",
         .manifest = "include_dirs", .raw_flags = {"-I", "--include-path", "-isystem", "--system-include"},
         .raw_prefix = "-I", .example = "inc",
         .doc = "user include folders (a manifest's: relative to its folder, searched as the program's)"}},
    OptionField<std::vector<std::string>>{&CompileOptions::flags,
                                          {.name = "flags", .kind = CompileOptionKind::raw_flags, .nvrtc = "",
                                           .manifest = "flags", .example = "--extra-device-vectorization",
                                           .doc = "NVRTC or nvcc flags, translated or passed (docs/nvcc-flags.md)"}},
};

inline constexpr std::size_t k_option_field_count = std::tuple_size_v<decltype(k_option_fields)>;

// Calls f(field) for each row, in order.
template <typename F>
constexpr void for_each_option_field(F&& f) {
  std::apply([&](const auto&... field) { (f(field), ...); }, k_option_fields);
}

namespace detail {

// Converts to any member type: T{AnyMember{}, ...} compiles for at most as many as T has members.
struct AnyMember {
  template <typename T>
  operator T() const;  // never defined: used unevaluated only
};

template <typename T, std::size_t... I>
constexpr bool brace_initializable(std::index_sequence<I...>) {
  return requires { T{(static_cast<void>(I), AnyMember{})...}; };
}

template <typename T, std::size_t N = 0>
constexpr std::size_t member_count() {
  if constexpr (brace_initializable<T>(std::make_index_sequence<N + 1>{})) {
    return member_count<T, N + 1>();
  } else {
    return N;
  }
}

template <typename T>
constexpr bool row_kind_matches(const OptionField<T>& f) {
  if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    return f.row.kind == CompileOptionKind::text_list || f.row.kind == CompileOptionKind::raw_flags;
  } else {
    return f.row.kind == kind_of_type<T>();
  }
}

}  // namespace detail

static_assert(detail::member_count<CompileOptions>() == k_option_field_count,
              "a field of kjit::CompileOptions has no row in compile::k_option_fields (core/compile/option_fields.hpp): "
              "add one, and it reaches marshalling, the key, the request hash, Python, manifests and the docs");
static_assert(std::apply([](const auto&... f) { return (detail::row_kind_matches(f) && ...); }, k_option_fields),
              "a row of compile::k_option_fields says a kind its member's type does not have");

}  // namespace kjit::compile
