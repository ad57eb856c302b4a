// kjit_prepare_probe: a fresh process for tests/unit/test_runtime_prepare.cpp, whose NVRTC nothing
// has opened yet: how kjit::prepare() and a Runtime's preparation leave it, what a compile makes
// after them, and that a process ending or forking while the preparation runs does so cleanly.
//
//   kjit_prepare_probe cold|wait|runtime SOURCE_FILE OUT_DIR
//       cold: a Runtime with RuntimeConfig::prepare off; wait: kjit::prepare(Wait::yes) first;
//       runtime: a Runtime with it on (the default), then waits for it. Each compiles SOURCE_FILE
//       for sm_90 (cache disabled) and writes OUT_DIR/{ptx,cubin,log,key}; prints the preparation's
//       state before the Runtime, right after it and after the compile ("idle running done").
//   kjit_prepare_probe exit MICROSECONDS
//       kjit::prepare(), then std::exit(0) that many microseconds later (exit handlers run).
//   kjit_prepare_probe fork MICROSECONDS SOURCE_FILE
//       kjit::prepare(), then fork() that many microseconds later; the child compiles SOURCE_FILE
//       and exits 0 when it made a cubin; the parent exits with the child's status.
// Exit 2 on a usage error or an exception.
#include <kjit/kjit.hpp>

#include "core/nvrtc_preparation.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

namespace {

const char* state_name(kjit::NvrtcPreparation::State s) {
  switch (s) {
  case kjit::NvrtcPreparation::State::idle: return "idle";
  case kjit::NvrtcPreparation::State::running: return "running";
  case kjit::NvrtcPreparation::State::done: return "done";
  }
  return "?";
}

std::string read(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write(const std::filesystem::path& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary) << bytes;
}

kjit::RuntimeConfig config(bool prepare) {
  kjit::RuntimeConfig c;
  c.cache_disabled = true;
  c.prepare = prepare;
  c.log = [](kjit::LogLevel, std::string_view) {};
  return c;
}

kjit::CompileResult compile(kjit::Runtime& rt, const std::filesystem::path& source) {
  return rt.compile(kjit::Program(source.filename().string(), read(source)), {.arch = kjit::Arch::sm(90)});
}

int usage() {
  std::fprintf(stderr, "usage: kjit_prepare_probe cold|wait|runtime SOURCE OUT_DIR | exit US | fork US SOURCE\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  const std::string mode = argv[1];
  try {
    if (mode == "exit") {
      kjit::prepare();
      std::this_thread::sleep_for(std::chrono::microseconds(std::atol(argv[2])));
      std::exit(0);
    }
    if (mode == "fork") {
      if (argc < 4) return usage();
      kjit::prepare();
      std::this_thread::sleep_for(std::chrono::microseconds(std::atol(argv[2])));
      const pid_t pid = ::fork();
      if (pid < 0) return 2;
      if (pid == 0) {
        kjit::Runtime rt(config(true));  // a child may prepare again: its own thread
        std::exit(compile(rt, argv[3]).cubin.empty() ? 1 : 0);
      }
      int status = 0;
      if (::waitpid(pid, &status, 0) != pid) return 2;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (argc < 4 || (mode != "cold" && mode != "wait" && mode != "runtime")) return usage();
    const std::string before = state_name(kjit::NvrtcPreparation::state());
    if (mode == "wait") kjit::prepare(kjit::Wait::yes);
    kjit::Runtime rt(config(mode != "cold"));
    const std::string made = state_name(kjit::NvrtcPreparation::state());
    if (mode == "runtime") kjit::NvrtcPreparation::wait();
    const kjit::CompileResult r = compile(rt, argv[2]);
    const std::filesystem::path out = argv[3];
    write(out / "ptx", r.ptx);
    write(out / "cubin", r.cubin);
    write(out / "log", r.log);
    write(out / "key", r.key);
    std::printf("%s %s %s\n", before.c_str(), made.c_str(), state_name(kjit::NvrtcPreparation::state()));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kjit_prepare_probe: %s\n", e.what());
    return 2;
  }
}
