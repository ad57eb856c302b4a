// kjit::cli::usage_message: what a user reads for a command line CLI11 refused, in place of its
// raw message where kjit can say what was meant: an unknown command or option with the names it
// most likely meant ("did you mean compile?", through kjit::closest_names), NVRTC or nvcc flags
// given before "--" with the corrected command line, a program for `profile` given without "--".
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace kjit::cli {

// `argc`/`argv` are what CLI11 parsed (up to the first "--"); `after_dashes` what followed it.
std::string usage_message(CLI::App& app, const CLI::ParseError& error, int argc, char** argv,
                          const std::vector<std::string>& after_dashes);

}  // namespace kjit::cli
