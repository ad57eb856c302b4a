// kjit::compile::NvrtcCompiler: one NVRTC compile of a Program with canonical arguments. A
// rejected program is returned as data (succeeded = false, the log), never thrown from here;
// NVRTC API failures throw NvrtcError. Safe to call from several threads at once.
//
// The fast path: a program that needs none of the declarations NVRTC's --minimal leaves out is
// compiled with it, and again without it if it fails (MinimalFrontEnd). --minimal is added here,
// never to the canonical list: the key, the PTX, the cubin and the log are the same either way.
// A program that includes nothing and names nothing of the nvcc environment is compiled without
// its pre-include (NvccEnvironment), which is likewise left in the canonical list.
//
// Precompiled headers: with a `pch_dir`, NVRTC's automatic PCH (--pch --pch-dir) creates or
// uses a PCH there. The directory must be private to the caller (one compile at a time: NVRTC
// names PCH files after the program, so concurrent compiles of one name in one directory race).
// The PCH flags are added here, never to the canonical list (they do not change the output),
// and NVRTC's PCH messages are kept out of the log. When the PCH heap is too small it is
// resized (while no other PCH compile runs) and the compile is retried once.
#pragma once

#include <kjit/compile_result.hpp>
#include <kjit/program.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace kjit::compile {

// Which of NVRTC's front ends made the output (MinimalFrontEnd): the full one, the minimal one
// (--minimal), or the full one after the minimal one failed. The output is the same with each.
enum class FrontEnd { full, minimal, fell_back };

// Whether compile() may use NVRTC's minimal front end (RuntimeConfig::nvrtc_fast, KJIT_NVRTC_FAST).
enum class FastPath { off, on };

struct NvrtcOutput {
  bool succeeded = false;
  CompileResult result;  // ptx, cubin, log, lowered_names, compile_ms filled; key/outcome not
  FrontEnd front_end = FrontEnd::full;
  std::string why_full;  // for FrontEnd::full: why not --minimal
  bool environment_left_out = false;  // the fast path dropped the unused nvcc environment
};

// "the minimal front end", "the full front end (the source names cudaMalloc)", ... for the debug log.
std::string describe(const NvrtcOutput& out);

class NvrtcCompiler {
public:
  // `arguments` is the canonical list; the toolkit include dirs are appended here.
  // directory() and include_path() are appended as include paths, then the toolkit's.
  static NvrtcOutput compile(const Program& program, const std::vector<std::string>& arguments,
                             const Arch& resolved, const std::filesystem::path& pch_dir = {},
                             FastPath fast = FastPath::on);
  // "13.0"
  static std::string version();
  // Whether this NVRTC (12.9+) has a compile cache of its own; compile() turns it off
  // (--no-cache), so that every compile runs ptxas and its log says so.
  static bool has_own_cache();
  // Real archs NVRTC can compile to (75, 80, ..., 120).
  static std::vector<int> supported_archs();
  // Whether a request has begun in this process (its key computed: the request path calls
  // note_request()) or compile() was called: NvrtcPreparation then skips its empty kernel (a compile
  // does NVRTC's first-compile set-up itself, a hit needs none, and neither should share the CPU).
  static void note_request() noexcept;
  static bool requested() noexcept;
  // The toolkit's include dirs (CUDA headers and CCCL), found once.
  static const std::vector<std::filesystem::path>& toolkit_include_dirs();
};

// Numbered source lines around each line of `source` that `log` names as
// "<program_name>(LINE): ...", with a marker on the named line.
std::string source_excerpt(const std::string& program_name, const std::string& source, const std::string& log);

}  // namespace kjit::compile
