// kjit::cli::Context: what every command shares: the global options and the Runtime they
// configure. Commands are registered by add_<name>_command(CLI::App&, Context&) functions, one
// file per command group (cli/command_<name>.cpp), and listed in cli/commands.hpp.
#pragma once

#include <kjit/kjit.hpp>

#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

namespace kjit::cli {

// Exit codes (like diff(1)): 0 success or equal, 1 different or a failed item, 2 usage or error.
inline constexpr int k_exit_ok = 0;
inline constexpr int k_exit_different = 1;
inline constexpr int k_exit_error = 2;

struct Context {
  std::string cache_dir;  // --cache-dir
  bool json = false;      // --json
  int verbose = 0;        // -v (repeatable)
  bool quiet = false;     // -q
  std::string lock_timeout;      // --lock-timeout (else KJIT_LOCK_TIMEOUT)
  std::string lock_stale_after;  // --lock-stale-after (else KJIT_LOCK_STALE_AFTER)
  int exit_code = k_exit_ok;
  std::vector<std::string> nvrtc_flags;  // everything after "--"


  // The Runtime, configured from the environment and then the global options.
  Runtime& runtime();
  // The options for a command: --arch, its own flags, then the flags after "--".
  CompileOptions options(const std::string& arch, const std::vector<std::string>& flags) const;
  bool stdout_is_terminal() const;

private:
  std::unique_ptr<Runtime> m_runtime;
};

}  // namespace kjit::cli
