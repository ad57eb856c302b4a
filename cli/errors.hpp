// kjit::cli errors as data: the kind of an exception ("usage", "compile", "io", ...), its JSON
// form ({"error": {"kind", "message", "file", "log"}}), and the exit code it means. The exit codes,
// the same for every subcommand, are defined in context.hpp.
#pragma once

#include <nlohmann/json.hpp>

#include <exception>
#include <string>
#include <string_view>

namespace kjit::cli {

// usage, compile, link, load, launch, cuda, nvrtc, driver, unavailable (a tool such as nvdisasm
// is not installed), io or internal.
std::string error_kind(const std::exception& e);
// {"error": {"kind": ..., "message": ..., "file": (when given), "log": (NVRTC's, for compile and
// for a rejected option)}}
nlohmann::json error_json(const std::exception& e, std::string_view file = {});
// k_exit_usage for a usage error, k_exit_failed for an input that failed (compile, io, load,
// launch), k_exit_error for the rest (no driver, a missing tool, NVRTC itself, anything unexpected).
int exit_code_for(const std::exception& e);

}  // namespace kjit::cli
