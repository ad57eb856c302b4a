// Small helpers shared by kjit's tests: a quiet RuntimeConfig on a given cache dir, resource
// usage as `kjit resources` computes it, and running a shell command for its exit code and stdout.
#pragma once

#include <kjit/runtime.hpp>
#include <kjit/tools/inspect.hpp>

#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace kjit::test {

inline kjit::RuntimeConfig quiet_config(const std::filesystem::path& cache) {
  kjit::RuntimeConfig c;
  c.cache_dir = cache;
  c.log = [](kjit::LogLevel, std::string_view) {};
  return c;
}

// What `kjit resources` does: compile with ptxas's report (through the cache), then read it.
inline std::vector<kjit::inspect::ResourceUsage> resource_usage_of(kjit::Runtime& rt, const kjit::Program& p,
                                                                   const kjit::CompileOptions& o) {
  return kjit::inspect::resource_usage(rt.compile(p, kjit::inspect::with_resource_report(o)));
}

struct CommandResult {
  int code = -1;  // exit status; -1 when killed by a signal
  std::string out;
};

// Reads a popen()ed command's stdout to its end, then closes it.
inline CommandResult finish_command(FILE* p) {
  CommandResult r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Runs `command` through /bin/sh; its stdout is collected.
inline CommandResult run_command(const std::string& command) {
  FILE* p = popen(command.c_str(), "r");
  REQUIRE(p != nullptr);
  return finish_command(p);
}

}  // namespace kjit::test
