// run_command: runs a program (no shell) and collects its stdout and stderr. Used for the
// CUDA toolkit's disassemblers. Throws IoError when the program cannot be started.
#pragma once

#include <string>
#include <vector>

namespace kjit::inspect {

struct CommandResult {
  int exit_code = 0;   // -1 when killed by a signal
  std::string output;  // stdout and stderr, interleaved as written
};

CommandResult run_command(const std::vector<std::string>& argv);

}  // namespace kjit::inspect
