// kjit: command-line front end of the kjit library. Parses, dispatches, prints.
#include "commands.hpp"
#include "errors.hpp"
#include "usage_hints.hpp"

#include <kjit/tools/install.hpp>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string_view>

namespace kjit::cli {

RuntimeConfig Context::runtime_config() const {
  RuntimeConfig config = RuntimeConfig::from_environment();
  // The CLI makes its Runtime where it first needs it: nothing to overlap NVRTC's preparation with,
  // and a command that compiles nothing (cache stats) would wait for it at exit.
  config.prepare = false;
  if (!cache_dir.empty()) config.cache_dir = cache_dir;
  config.cache_required = cache_required;
  if (verbose == 1) config.log_level = LogLevel::info;
  if (verbose >= 2) config.log_level = LogLevel::debug;
  if (quiet) config.log_level = LogLevel::error;
  if (!lock_timeout.empty()) config.lock_timeout = parse_duration(lock_timeout, "--lock-timeout");
  if (!lock_stale_after.empty()) {
    config.lock_stale_after = parse_duration(lock_stale_after, "--lock-stale-after");
    if (config.lock_stale_after < std::chrono::seconds(2)) {  // as KJIT_LOCK_STALE_AFTER: a holder beats every second
      throw UsageError(fmt::format("--lock-stale-after {}: expected at least 2s", lock_stale_after));
    }
  }
  if (!remote.empty()) config.remote_cache = remote;  // its spelling is checked where it is opened
  if (require_hit) config.require_hit = true;
  return config;
}

Runtime& Context::runtime() {
  if (!m_runtime) m_runtime = std::make_unique<Runtime>(runtime_config());
  return *m_runtime;
}

CompileOptions Context::options(const std::string& arch, const std::vector<std::string>& flags) const {
  CompileOptions o;
  if (!arch.empty()) o.arch = Arch::parse(arch);
  m_native_arch = m_native_arch || arch.empty();
  o.flags = flags;
  o.flags.insert(o.flags.end(), nvrtc_flags.begin(), nvrtc_flags.end());
  return o;
}

std::string Context::describe(const std::exception& e) const {
  std::string message = e.what();
  if (m_native_arch && dynamic_cast<const DriverNotFoundError*>(&e) != nullptr &&
      message.find("--arch") == std::string::npos) {
    message += "; the target defaults to this machine's GPU: to compile without one, name the target, "
               "--arch sm_90 (or your GPU's sm_XX)";
  }
  return message;
}

bool Context::shows(LogLevel level) const { return level <= runtime_config().log_level; }

bool Context::stdout_is_terminal() const { return isatty(STDOUT_FILENO) == 1; }

Program Context::program(const std::string& file) const {
  Program p = [&file] {
    try {
      return read_program(file);
    } catch (const UsageError& e) {  // not text (a NUL byte): an input that cannot be used, as a missing one
      throw IoError(e.what());
    }
  }();
  for (const auto& e : name_expressions) p.instantiate(e);
  return p;
}

void Context::add_instantiate_option(CLI::App& command, bool has_kernel_option) {
  command.add_option("--instantiate", name_expressions,
                     std::string("Instantiate a template kernel or variable by its name expression (repeatable): "
                                 "--instantiate 'axpy<float>'") +
                         (has_kernel_option ? "; --kernel then takes the same expression" : ""));
}

void Context::refuse_extra_words(const std::string& command, const std::string& file,
                                 const std::vector<std::string>& extra) const {
  if (extra.empty()) return;
  throw UsageError(fmt::format("kjit {} takes one file, and {} came after {}: run it once a file (kjit compile takes "
                               "several); flags for NVRTC and nvcc go after \"--\"",
                               command, fmt::join(extra, " "), file));
}

std::string Context::warn_if_no_kernels(const std::string& file, const Program& program,
                                        const CompileResult& result) const {
  // The template kernels the compile made no instance of, qualified as a name expression needs
  // them: "ops::gelu<...>" for a template in namespace ops.
  const std::vector<std::string> templates = inspect::uninstantiated_templates(program.source(), result.ptx);
  if (result.ptx.find(".entry ") != std::string::npos) {
    // Other kernels compiled: each template left without an instance is a note, not a failure.
    if (!templates.empty() && shows(LogLevel::warn)) {
      std::vector<std::string> lines;
      for (const auto& t : templates) lines.push_back(fmt::format("--instantiate '{}<...>'", t));
      fmt::print(stderr, "kjit: warning: {}: template kernel{} {} made no code (NVRTC makes a template's instance "
                         "only when named): {}\n",
                 file, templates.size() == 1 ? "" : "s", fmt::join(templates, ", "), fmt::join(lines, " "));
    }
    return {};
  }
  std::string hint = "no kernels";
  if (!templates.empty()) hint += fmt::format("; a template needs --instantiate '{}<...>'", templates.front());
  if (shows(LogLevel::warn)) fmt::print(stderr, "kjit: warning: {}: {}\n", file, hint);
  return hint;
}

std::string Context::kernel_text(const std::string& kernel, const Program& program, const CompileResult& result,
                                 const std::function<std::string(const std::string&)>& select) const {
  const std::optional<std::string> lowered = result.lowered_name(kernel);
  try {
    return select(lowered.value_or(kernel));
  } catch (const UsageError& e) {
    if (lowered) throw;
    // A template's instance ("scale<4>"), or a template by its name ("scale"): NVRTC makes one
    // only when it is named, by its qualified name ("ops::scale<4>" for a template in namespace ops).
    const std::string_view base = std::string_view(kernel).substr(0, kernel.find('<'));
    const std::string_view arguments =
        kernel.find('<') == std::string::npos ? std::string_view("<...>") : std::string_view(kernel).substr(base.size());
    for (const std::string& t : inspect::template_kernels(program.source())) {
      const std::size_t colons = t.rfind("::");
      const std::string_view last = colons == std::string::npos ? std::string_view(t) : std::string_view(t).substr(colons + 2);
      if (t != base && last != base) continue;
      const bool named = std::find(name_expressions.begin(), name_expressions.end(), fmt::format("{}{}", t, arguments)) !=
                         name_expressions.end();
      if (named) throw;  // instantiated, and still not there: the selection's own message says why
      throw UsageError(fmt::format("{}; a template's instance is made only when named: --instantiate '{}{}'", e.what(),
                                   t, arguments));
    }
    throw;
  }
}

namespace {

// `kjit --version`: kjit's, then the NVRTC it compiles with (its version and file, or why none
// opens) and the toolkit whose headers NVRTC is given. Never throws: a version line always prints.
std::string version_text() {
  std::string nvrtc;
  try {
    const std::string v = kjit::nvrtc_version();
    const ToolkitPaths paths = toolkit_paths();
    nvrtc = fmt::format("NVRTC {} ({})\ntoolkit: {}", v,
                        paths.nvrtc_library.empty() ? "library file unknown" : paths.nvrtc_library,
                        paths.root().empty() ? "none found (NVRTC's built-in headers only)" : paths.root());
  } catch (const std::exception& e) {
    nvrtc = fmt::format("NVRTC: none ({})", e.what());
  }
  return fmt::format("kjit {}\n{}", kjit::version(), nvrtc);
}

nlohmann::json version_json() {
  nlohmann::json j{{"kjit_version", std::string(kjit::version())}};
  try {
    j["nvrtc_version"] = kjit::nvrtc_version();
    const ToolkitPaths paths = toolkit_paths();
    j["nvrtc_library"] = paths.nvrtc_library;
    j["toolkit_root"] = paths.root();
  } catch (const std::exception& e) {
    j["nvrtc_error"] = e.what();
  }
  return j;
}

// Each command's and subcommand's --help: its own footer, then the global options (given before
// or after the command: fallthrough) and, unless it says its own, the exit codes in one line.
void add_global_options_footer(CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    const std::string name = o->get_name(false, true);
    if (name == "-h,--help" || name == "--version") continue;
    names.push_back(name + (o->get_items_expected_min() > 0 ? " " + o->get_type_name() : ""));
  }
  const std::string global = fmt::format("Global options, before or after the command (kjit --help): {}.",
                                         fmt::join(names, ", "));
  const std::string exits = "Exit codes: 0 success, 1 an input failed, 2 usage, 3 could not run (kjit --help).";
  auto add = [&](auto& self, CLI::App* command) -> void {
    std::string footer = command->get_footer();
    const bool own_exits = footer.find("Exit code") != std::string::npos;
    footer += (footer.empty() ? "" : "\n") + global + (own_exits ? "" : "\n" + exits);
    command->footer(footer);
    for (CLI::App* sub : command->get_subcommands([](CLI::App*) { return true; })) self(self, sub);
  };
  for (CLI::App* command : app.get_subcommands([](CLI::App*) { return true; })) add(add, command);
}

}  // namespace

}  // namespace kjit::cli

int main(int argc, char** argv) {
  using namespace kjit::cli;
  kjit::install_tools();  // KJIT_DUMP_DIR's dumps and KJIT_TUNE_METRICS's figures (libkjit_tools)
  Context ctx;
  CLI::App app{"kjit: compile CUDA source at run time with NVRTC, cache PTX and cubin on disk, inspect and "
               "diff what the compiler made, and warm caches ahead of time.",
               "kjit"};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] { return version_text(); },
                       "kjit's version, and the NVRTC and CUDA toolkit it compiles with (kjit info says more)");
  app.add_option("--cache-dir", ctx.cache_dir, "Cache directory (default: $KJIT_CACHE_DIR, else "
                                               "$XDG_CACHE_HOME/kjit, else ~/.cache/kjit). A folder named here or "
                                               "in KJIT_CACHE_DIR that cannot be used (another user's, writable by "
                                               "others, cannot be made) stops the command (exit 3); the default "
                                               "one gives a warning, and compiles are not kept");
  app.add_flag("--json", ctx.json, "Machine-readable output (JSON)");
  app.add_flag("-v,--verbose", ctx.verbose,
               "More log output on stderr: the cache folder, and each compile's key, outcome, phases (hash, lookup, "
               "NVRTC, store) and entry (repeat for debug)");
  app.add_flag("-q,--quiet", ctx.quiet, "Only errors in the log output");
  app.add_option("--lock-timeout", ctx.lock_timeout,
                 "Longest wait for another process compiling the same kernel (30s, 5m; default 5m or "
                 "$KJIT_LOCK_TIMEOUT)");
  app.add_option("--lock-stale-after", ctx.lock_stale_after,
                 "Stop waiting once that process shows no progress this long, and compile (at least 2s; default "
                 "10s or $KJIT_LOCK_STALE_AFTER)");
  app.add_option("--remote", ctx.remote,
                 "The fleet's shared cache behind the disk cache: redis://host[:port][/db] or "
                 "unix:///path/redis.sock, or a comma list of shards with weights: redis://a,redis://b(2), then "
                 "http[s]://host/path levels, comma-separated (default $KJIT_REMOTE_CACHE; see also "
                 "KJIT_REMOTE_READONLY, KJIT_REMOTE_SECRET_FILE, KJIT_REMOTE_SIGNING_KEY_FILE, KJIT_REMOTE_PUBLIC_KEY_FILE, "
                 "KJIT_REMOTE_HTTP_AUTH_FILE, KJIT_REMOTE_TIMEOUT, KJIT_REMOTE_TTL, KJIT_REMOTE_MAX_VALUE)");
  app.add_flag("--require-hit", ctx.require_hit,
               "A kernel that no cache tier has (disk, remote) is an error naming each tier and why it missed "
               "(exit 1), never compiled: for seeded images and nodes (default $KJIT_REQUIRE_HIT)");
  app.fallthrough();

  add_info_command(app, ctx);
  add_compile_commands(app, ctx);
  add_cache_commands(app, ctx);
  add_inspect_commands(app, ctx);
  add_warm_command(app, ctx);
  add_profile_command(app, ctx);
  add_tune_command(app, ctx);
  // The whole exit-code paragraph once, in `kjit --help` (set after the commands, which would
  // inherit it); each command's --help ends in the global options it takes and the short table.
  app.footer(k_exit_codes_help);
  add_global_options_footer(app);

  // Everything after the first "--" is NVRTC flags, for whichever command takes them (for
  // `profile`, the program and its arguments); CLI11
  // parses what comes before (so a command with several files still takes flags).
  int parsed = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--") {
      parsed = i;
      ctx.nvrtc_flags.assign(argv + i + 1, argv + argc);
      break;
    }
  }
  // --json anywhere before "--": errors become JSON on stdout too, also those CLI11 finds.
  bool json = false;
  for (int i = 1; i < parsed; ++i) json = json || std::string_view(argv[i]) == "--json";
  bool help = false;
  for (int i = 1; i < parsed; ++i) {
    const std::string_view a = argv[i];
    help = help || a == "--help" || a == "-h" || a == "--version";
  }
  try {
    // Every KJIT_* value is checked before a command runs: one kjit cannot use (KJIT_MAX_SOURCE_SIZE=0)
    // is a usage error naming the variable, not a failure of each compile after.
    if (!help) (void)kjit::RuntimeConfig::from_environment();
    app.parse(parsed, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    bool version = false;
    for (int i = 1; i < parsed; ++i) version = version || std::string_view(argv[i]) == "--version";
    if (json && version) {
      print_json(version_json());
      return k_exit_ok;
    }
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const std::string message = usage_message(app, e, parsed, argv, ctx.nvrtc_flags);
    if (json) {
      print_json(nlohmann::json{{"error", {{"kind", "usage"}, {"message", message}}}});
    } else {
      fmt::print(stderr, "kjit: error: {}\nRun 'kjit --help' (or 'kjit COMMAND --help') for more information.\n",
                 message);
    }
    return k_exit_usage;
  } catch (const std::exception& e) {
    if (json) {
      nlohmann::json j = error_json(e, ctx.input);
      j["error"]["message"] = ctx.describe(e);
      print_json(j);
    } else if (!ctx.input.empty()) {
      fmt::print(stderr, "kjit: error: {}: {}\n", ctx.input, ctx.describe(e));
    } else {
      fmt::print(stderr, "kjit: error: {}\n", ctx.describe(e));
    }
    return exit_code_for(e);
  }
  return ctx.exit_code;
}
