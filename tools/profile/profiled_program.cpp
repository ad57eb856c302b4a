// kjit::profile_program (`kjit profile -- PROGRAM`): the program runs with CUDA's injection
// naming libkjit_inject (inject/), which opens a Profiler when the program's CUDA starts and, at
// its exit, writes the summary (and the trace when asked) into a folder this process made. The
// settings travel in KJIT_PROFILE_* variables; each process of the program writes its own files.
#include <kjit/error.hpp>
#include <kjit/device.hpp>
#include <kjit/tools/profile.hpp>

#include "core/spi/base.hpp"
#include "core/spi/system.hpp"
#include "tools/profile/cupti_library.hpp"
#include "tools/profile/metric_names.hpp"
#include "tools/profile/metric_session.hpp"
#include "tools/profile/summary.hpp"

#include <fmt/format.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace kjit {
namespace {

namespace fs = std::filesystem;

constexpr const char* k_injection_name = "libkjit_inject.so";

fs::path injection_library() {
  if (auto chosen = base::env_text(base::Env::profile_injection)) {
    if (!fs::exists(*chosen)) {
      throw UsageError(fmt::format("profiling a program: KJIT_PROFILE_INJECTION names {}, which does not exist", *chosen));
    }
    return *chosen;
  }
  Dl_info info{};
  std::vector<fs::path> tried;
  if (dladdr(reinterpret_cast<void*>(&profile_program), &info) != 0 && info.dli_fname != nullptr) {
    const fs::path here = fs::weakly_canonical(info.dli_fname).parent_path();
    tried = {here / k_injection_name, here / "lib" / k_injection_name, here.parent_path() / "lib" / k_injection_name,
             here.parent_path() / "inject" / k_injection_name};
  }
  for (const auto& p : tried) {
    if (fs::exists(p)) return p;
  }
  std::string where;
  for (const auto& p : tried) where += (where.empty() ? "" : ", ") + p.string();
  throw UsageError(fmt::format("profiling a program: {} (CUDA's injection library of kjit's profiler) was not found "
                               "(looked at {}); install kjit whole or name it in KJIT_PROFILE_INJECTION",
                               k_injection_name, where.empty() ? "nothing: libkjit's folder is unknown" : where));
}

// A file the program's processes wrote into the profile folder (atomically: whole or absent).
std::string read_output(const std::string& program, const fs::path& p) {
  system::FileContent f = system::read_file(p);
  if (!f.ok()) throw IoError(fmt::format("profiling {}: {}", program, f.message()));
  return std::move(f.bytes);
}

// Ignores SIGINT and SIGQUIT while the program runs (as system() does): ^C reaches the program,
// and this process lives to report.
class IgnoreInterrupts {
public:
  IgnoreInterrupts() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGINT, &ignore, &m_int);
    sigaction(SIGQUIT, &ignore, &m_quit);
  }
  ~IgnoreInterrupts() {
    sigaction(SIGINT, &m_int, nullptr);
    sigaction(SIGQUIT, &m_quit, nullptr);
  }
  IgnoreInterrupts(const IgnoreInterrupts&) = delete;
  IgnoreInterrupts& operator=(const IgnoreInterrupts&) = delete;

private:
  struct sigaction m_int {}, m_quit {};
};

// Without a device there is no chip to check the names against: each chip CUPTI knows is tried
// (the reference GPU's, GH100, first: usually the only one), and a name that no chip knows is the
// caller's to fix (UsageError), as it is on a GPU machine. Where CUPTI cannot check (not there, no
// host API, no chip it can check), the names pass: the program's profile says why no counters
// were read.
void check_metrics_for_any_chip(const std::vector<std::string>& metrics) {
  const profile::CuptiApi* api = profile::cupti(nullptr);
  if (api == nullptr || api->host_supported_chips == nullptr) return;
  CUpti_Profiler_Host_GetSupportedChips_Params c{CUpti_Profiler_Host_GetSupportedChips_Params_STRUCT_SIZE};
  if (api->host_supported_chips(&c) != CUPTI_SUCCESS || c.numChips == 0 || c.ppChipNames == nullptr) return;
  std::vector<std::string> chips(c.ppChipNames, c.ppChipNames + c.numChips);
  const auto reference = std::find(chips.begin(), chips.end(), "GH100");
  if (reference != chips.end()) std::rotate(chips.begin(), reference, reference + 1);
  std::string refused;  // the first chip's message
  std::string refused_by;
  std::size_t checked = 0;
  for (const auto& chip : chips) {
    try {
      (void)plan_metrics(metrics, chip);
      return;
    } catch (const UsageError& e) {
      ++checked;
      if (refused.empty()) {
        refused = e.what();
        refused_by = chip;
      }
    } catch (const UnavailableError&) {
      // A chip CUPTI lists but cannot check (Volta has no range profiler): the next one.
    }
  }
  if (refused.empty()) return;  // no chip could check them
  // There is no GPU to name: "not a metric of GH100" would read as if this machine had one. The
  // message says which chips were asked, and whose names the closest ones are.
  const std::string chip_phrase = "is not a metric of " + refused_by;
  if (const std::size_t at = refused.find(chip_phrase); at != std::string::npos) {
    refused.replace(at, chip_phrase.size(),
                    fmt::format("is a metric of none of the {} GPU chips CUPTI {} knows (no GPU here: the names were "
                                "checked for each)",
                                checked, api->library));
  }
  if (const std::size_t at = refused.find("; closest valid names: "); at != std::string::npos) {
    refused.replace(at, 23, fmt::format("; closest valid names on {}{}: ", refused_by,
                                        refused_by == "GH100" ? " (H100, H200)" : ""));
  }
  throw UsageError(refused);
}

}  // namespace

ProfiledRun profile_program(const std::vector<std::string>& argv, const ProfileRunOptions& options) {
  if (argv.empty() || argv.front().empty()) throw UsageError("profiling a program: no program given");
  (void)profile::summarize(profile::Recording{}, options.table);  // a wrong sort key, before anything runs
  std::string metrics;  // the names, comma-separated, for the injection
  if (!options.metrics.empty()) {
    // Names and the kernel regex checked before anything runs: against device 0's chip where
    // there is one (an unknown name is a UsageError listing the closest valid ones).
    (void)profile::expand_metrics(options.metrics);
    for (const auto& item : options.metrics) metrics += (metrics.empty() ? "" : ",") + item;  // as asked: "sol" stays the set
    (void)profile::LaunchFilter(options.metric_filter);
    if (driver_available() && device_count() > 0) {
      try {
        (void)plan_metrics(options.metrics);
      } catch (const UnavailableError&) {
        // CUPTI cannot check them here; the program's profile says why it read no counters.
      }
    } else {
      check_metrics_for_any_chip(options.metrics);
    }
  }
  const fs::path injection = injection_library();
  std::string folder_template = (fs::temp_directory_path() / "kjit-profile-XXXXXX").string();
  if (mkdtemp(folder_template.data()) == nullptr) {
    throw IoError(fmt::format("profiling {}: making a folder for its profile under {}: {}", argv.front(),
                              fs::temp_directory_path().string(), std::strerror(errno)));
  }
  const fs::path folder = folder_template;
  struct Cleanup {
    fs::path folder;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(folder, ec);
    }
  } cleanup{folder};

  const std::string max_events = std::to_string(options.max_events);
  const std::string launch_count = std::to_string(options.metric_filter.launch_count);
  const std::string launch_skip = std::to_string(options.metric_filter.launch_skip);
  const std::string limit = std::to_string(options.table.limit);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    throw IoError(fmt::format("profiling {}: pipe: {}", argv.front(), std::strerror(errno)));
  }
  IgnoreInterrupts interrupts;
  const pid_t child = fork();
  if (child < 0) {
    const int e = errno;
    close(report[0]);
    close(report[1]);
    throw IoError(fmt::format("profiling {}: fork: {}", argv.front(), std::strerror(e)));
  }
  if (child == 0) {
    signal(SIGINT, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
    setenv("CUDA_INJECTION64_PATH", injection.c_str(), 1);
    setenv("KJIT_PROFILE_OUT", folder.c_str(), 1);
    setenv("KJIT_PROFILE_TRACE", options.trace.empty() ? "0" : "1", 1);
    setenv("KJIT_PROFILE_MAX_EVENTS", max_events.c_str(), 1);
    setenv("KJIT_PROFILE_SORT", options.table.sort_by.c_str(), 1);
    setenv("KJIT_PROFILE_LIMIT", limit.c_str(), 1);
    setenv("KJIT_PROFILE_BY_SHAPE", options.table.by_shape ? "1" : "0", 1);
    setenv("KJIT_PROFILE_PHASES", options.table.phases ? "1" : "0", 1);
    setenv("KJIT_PROFILE_METRICS", metrics.c_str(), 1);
    setenv("KJIT_PROFILE_KERNEL", options.metric_filter.kernel.c_str(), 1);
    setenv("KJIT_PROFILE_LAUNCH_COUNT", launch_count.c_str(), 1);
    setenv("KJIT_PROFILE_LAUNCH_SKIP", launch_skip.c_str(), 1);
    execvp(args[0], args.data());
    const int e = errno;
    (void)!write(report[1], &e, sizeof e);
    _exit(127);
  }
  close(report[1]);
  int exec_errno = 0;
  const bool exec_failed = read(report[0], &exec_errno, sizeof exec_errno) == static_cast<ssize_t>(sizeof exec_errno);
  close(report[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (exec_failed) {
    throw UsageError(fmt::format("profiling {}: starting it failed: {}", argv.front(), std::strerror(exec_errno)));
  }

  ProfiledRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
  std::vector<int> pids;
  for (const auto& entry : fs::directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    const std::string suffix = ".summary.json";
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      pids.push_back(std::atoi(name.c_str()));
    }
  }
  // The program first, then its children by pid.
  std::sort(pids.begin(), pids.end(), [&](int a, int b) { return (a == child) != (b == child) ? a == child : a < b; });
  for (int pid : pids) {
    run.pids.push_back(pid);
    run.summaries.push_back(
        profile_summary_from_json(read_output(argv.front(), folder / fmt::format("{}.summary.json", pid))));
    const fs::path trace = folder / fmt::format("{}.trace.json", pid);
    if (!options.trace.empty() && fs::exists(trace)) {
      fs::path target = options.trace;
      if (pid != child) {
        target = options.trace.parent_path() /
                 fmt::format("{}.{}{}", options.trace.stem().string(), pid, options.trace.extension().string());
      }
      // Not a rename: the folder may be on another file system than the target.
      if (auto written = system::write_file_atomically(target, read_output(argv.front(), trace)); !written) {
        throw IoError(fmt::format("profiling {}: writing its Chrome trace: {}", argv.front(), written.error().message));
      }
      run.traces.push_back(target);
    }
  }
  if (run.summaries.empty()) {
    // What this machine lacks comes first: without a driver or CUPTI no program writes a profile.
    std::string cupti_why;
    if (WIFSIGNALED(status)) {
      run.message = fmt::format("{} was ended by signal {} ({}) before it could write its profile", argv.front(),
                                WTERMSIG(status), strsignal(WTERMSIG(status)));
    } else if (!driver_available()) {
      run.message = fmt::format("{} wrote no profile: there is no CUDA driver here ({}), so it could not run on a "
                                "GPU and CUDA's injection never loaded the profiler", argv.front(),
                                driver_unavailable_reason());
    } else if (profile::cupti(&cupti_why) == nullptr) {
      run.message = fmt::format("{} wrote no profile: CUPTI could not be loaded ({}); set KJIT_CUPTI_LIBRARY or "
                                "KJIT_CUDA_HOME to a toolkit that has it", argv.front(), cupti_why);
    } else {
      run.message = fmt::format("{} wrote no profile: it made no CUDA call, or it left without running its exit "
                                "handlers (_exit, abort)", argv.front());
    }
  }
  return run;
}

}  // namespace kjit
