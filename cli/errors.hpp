// kjit::cli errors as data: the kind of an exception ("usage", "compile", "io", ...), its JSON
// form ({"error": {"kind", "message", "file", "log"}}), and the exit code it means. The exit codes,
// the same for every subcommand, are defined in context.hpp.
#pragma once

#include <nlohmann/json.hpp>

#include <exception>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::cli {

// usage, compile, link, load, launch, cuda, nvrtc, driver, unavailable (a tool such as nvdisasm
// is not installed), io or internal.
std::string error_kind(const std::exception& e);
// {"error": {"kind": ..., "message": ..., "file": (when given), "log": (NVRTC's, for compile and
// for a rejected option)}}
nlohmann::json error_json(const std::exception& e, std::string_view file = {});
// The CLI's one JSON writer: every document kjit prints goes through it. Bytes that are not
// UTF-8 (a Latin-1 comment in a compile log, a file name) become U+FFFD instead of aborting the
// dump, so --json always prints one valid document. indent -1: one line.
std::string json_text(const nlohmann::json& j, int indent = -1);
std::string json_text(const nlohmann::ordered_json& j, int indent = -1);
// json_text(j, indent) and a newline, on stdout.
void print_json(const nlohmann::json& j, int indent = -1);
// A name (a file name, an argument) for a JSON document: valid UTF-8 is kept as it is, each byte
// of an invalid sequence becomes the text \xNN, so the raw bytes can still be told apart.
std::string json_name(std::string_view name);
std::vector<std::string> json_names(const std::vector<std::string>& names);

// k_exit_usage for a usage error, k_exit_failed for an input that failed (compile, io, load,
// launch), k_exit_error for the rest (no driver, a missing tool, NVRTC itself, anything unexpected).
int exit_code_for(const std::exception& e);

}  // namespace kjit::cli
