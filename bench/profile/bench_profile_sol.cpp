// bench_profile_sol: `kjit profile --metrics sol` against `ncu --section SpeedOfLight` on the same
// programs, whole-process wall time, in one run on one GPU (rounds alternate the two tools):
//   1. the softmax example (examples/profiling --once, KJIT_TUNE=off: one softmax launch);
//   2. a 100-launch loop (examples/without_kjit 100: 100 saxpy launches, each measured by both);
//   3. the same programs unprofiled, for the floor.
// Each line prints kjit's median, ncu's, and kjit/ncu (target: at most 0.5). Without ncu on PATH
// it prints kjit's figures alone.
// Usage: bench_profile_sol [rounds=3]
#include "bench_util.hpp"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using kjit::bench_util::median;
using kjit::bench_util::now_us;

namespace {

// Runs a shell command with its output discarded; wall time in seconds, or -1 when it failed.
double wall_s(const std::string& command) {
  const double start = now_us();
  const int status = std::system((command + " >/dev/null 2>&1").c_str());
  const double s = (now_us() - start) / 1e6;
  return status == 0 ? s : -1.0;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  const std::string bin = KJIT_BINARY_DIR;
  const std::string kjit = bin + "/cli/kjit";
  const bool have_ncu = std::system("command -v ncu >/dev/null 2>&1") == 0;
  struct Program {
    const char* what;
    std::string command;
  };
  const std::vector<Program> programs = {
      {"softmax example (1 launch)", "env KJIT_TUNE=off " + bin + "/examples/profiling/profiling --once"},
      {"100-launch loop (without_kjit 100)", bin + "/examples/without_kjit/without_kjit 100"},
  };
  std::printf("bench_profile_sol: whole-process wall time, median of %d rounds%s\n", rounds,
              have_ncu ? "" : " (ncu is not on PATH: kjit alone)");
  for (const auto& p : programs) {
    std::vector<double> plain, ours, theirs;
    for (int r = 0; r < rounds; ++r) {
      plain.push_back(wall_s(p.command));
      ours.push_back(wall_s(kjit + " profile --metrics sol -- " + p.command));
      if (have_ncu) theirs.push_back(wall_s("ncu --section SpeedOfLight " + p.command));
    }
    for (const auto* v : {&plain, &ours, &theirs}) {
      for (double s : *v) {
        if (s < 0) {
          std::printf("%-36s a run failed (rerun it by hand: %s)\n", p.what, p.command.c_str());
          return 1;
        }
      }
    }
    const double k = median(ours), n = median(theirs), f = median(plain);
    if (have_ncu) {
      std::printf("%-36s kjit profile --metrics sol %7.3f s   ncu --section SpeedOfLight %7.3f s   ratio %5.3f "
                  "(target <= 0.5)   unprofiled %6.3f s\n", p.what, k, n, k / n, f);
    } else {
      std::printf("%-36s kjit profile --metrics sol %7.3f s   unprofiled %6.3f s\n", p.what, k, f);
    }
  }
  return 0;
}
