// kjit::cli::Context: what every command shares: the global options and the Runtime they
// configure. Commands are registered by add_<name>_command(CLI::App&, Context&) functions, one
// file per command group (cli/command_<name>.cpp), and listed in cli/commands.hpp.
#pragma once

#include <kjit/tools.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kjit::cli {

// Exit codes, the same for every subcommand (listed in `kjit --help` and the README):
inline constexpr int k_exit_ok = 0;        // success (diff: equal)
inline constexpr int k_exit_failed = 1;    // done, but an input failed or differs (a file that did not
                                           // compile, a failed warm item, damage found, diff: different,
                                           // a kernel no cache tier had under --require-hit)
inline constexpr int k_exit_usage = 2;     // the command line or an option value is wrong
inline constexpr int k_exit_error = 3;     // the command could not run (no driver, NVRTC, unexpected)
inline constexpr int k_exit_different = k_exit_failed;
inline constexpr const char* k_exit_codes_help =
    "Exit codes: 0 success (diff: equal); 1 an input failed or differs (a compile or link error, a missing or "
    "unreadable input file, a failed warm item, damage found by cache verify, diff: different, a kernel no cache "
    "tier had under --require-hit); 2 usage (a wrong "
    "command line, option value or NVRTC flag); 3 the command could not run (no driver where one is needed, a "
    "missing tool such as nvdisasm, NVRTC itself, unexpected).\n"
    "With --json every command prints exactly one JSON document on stdout, also on failure: "
    "{\"error\": {\"kind\", \"message\", \"file\", \"log\"}} in place of a failed input's result.";

struct Context {
  std::string cache_dir;  // --cache-dir
  bool json = false;      // --json
  int verbose = 0;        // -v (repeatable)
  bool quiet = false;     // -q
  std::string lock_timeout;      // --lock-timeout (else KJIT_LOCK_TIMEOUT)
  std::string lock_stale_after;  // --lock-stale-after (else KJIT_LOCK_STALE_AFTER)
  std::string remote;            // --remote (else KJIT_REMOTE_CACHE)
  bool require_hit = false;      // --require-hit (else KJIT_REQUIRE_HIT)
  int exit_code = k_exit_ok;
  std::string input;  // the input file a command is working on (named in errors)
  std::vector<std::string> nvrtc_flags;  // everything after "--"
  std::vector<std::string> name_expressions;  // --instantiate (compile, ptx, sass, resources, diff, cache explain)
  // A cache folder named (--cache-dir, KJIT_CACHE_DIR) that cannot be used stops the command with
  // exit 3; `info` reports the folder whatever its state.
  CacheRequired cache_required = CacheRequired::when_named;


  // The environment's configuration, then the global options over it.
  RuntimeConfig runtime_config() const;
  // The Runtime of runtime_config().
  Runtime& runtime();
  // The options for a command: --arch, its own flags, then the flags after "--".
  CompileOptions options(const std::string& arch, const std::vector<std::string>& flags) const;
  // Whether a line of `level` is shown: the level of KJIT_LOG, -v and -q (runtime_config()), as
  // the library's own log lines. NVRTC's warnings and kjit's notes on a compile are warnings.
  bool shows(LogLevel level) const;
  bool stdout_is_terminal() const;
  // The .cu file as a Program, with the --instantiate name expressions.
  Program program(const std::string& file) const;
  // "kjit: warning: FILE: no kernels; ..." on stderr (unless -q) when the result has no kernel:
  // an empty file, or templates no --instantiate named. Returns the hint (for errors too). With
  // other kernels, a warning naming each template kernel left without an instance, and the
  // --instantiate line (qualified) that makes one.
  std::string warn_if_no_kernels(const std::string& file, const Program& program, const CompileResult& result) const;
  // The message a user reads for `e`: e.what(), and for a missing driver where the target was
  // left native (the default), the option that compiles without a GPU (--arch sm_90).
  std::string describe(const std::exception& e) const;
  // What `select` (function_ptx, sass) gives for --kernel `kernel`: by its name expression where
  // --instantiate named it, else as given (a kernel in a namespace also by its unqualified name,
  // when it names one); a template's instance, or a template, that is not there is a UsageError
  // that names --instantiate with the template's qualified name ("ops::gelu<float>").
  std::string kernel_text(const std::string& kernel, const Program& program, const CompileResult& result,
                          const std::function<std::string(const std::string&)>& select) const;
  // A one-file command (ptx, sass, resources, cache explain) given more words before "--" than
  // its file: a UsageError that says it takes one file and what came after it (kjit compile takes
  // several; NVRTC flags go after "--"). Nothing when `extra` is empty.
  void refuse_extra_words(const std::string& command, const std::string& file,
                          const std::vector<std::string>& extra) const;
  // Adds --instantiate to a subcommand (whose --kernel, if it has one, takes the same expression).
  void add_instantiate_option(CLI::App& command, bool has_kernel_option = false);

private:
  std::unique_ptr<Runtime> m_runtime;
  mutable bool m_native_arch = false;  // options() was asked for the native arch (no --arch)
};

}  // namespace kjit::cli
