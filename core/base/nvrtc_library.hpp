// kjit::base::nvrtc_library_file: NVRTC opened at run time, as libcuda is (core/driver/): libkjit
// records no libnvrtc (no DT_NEEDED), and kjitConfig.cmake adds none to its consumers, so a
// program that links libkjit (the CLI, the Python extension, a find_package consumer) starts
// wherever the toolkit is, and the first NVRTC call opens libnvrtc.so.<major>:
//  1. the one this process already loaded (a program that links NVRTC itself; the Python
//     package's fallback from pip's CUDA packages);
//  2. else the one of the toolkit the variables name (named_toolkit(): the first of
//     KJIT_CUDA_HOME, CUDA_HOME, CUDA_PATH whose folder holds include/ or a libnvrtc, in its lib64/,
//     lib/, targets/<arch>/lib/): that one or none, since its headers are the ones NVRTC is given;
//     one that is missing or cannot be opened (not a library, a folder, a symbolic link loop) is
//     an error naming the file and why;
//  3. else where the loader finds it (LD_LIBRARY_PATH, ldconfig), else in the build's toolkit and
//     /usr/local/cuda, else the fallbacks the program named (add_nvrtc_fallback: the Python package
//     names pip's CUDA packages').
// The nvrtc* functions kjit calls are defined in nvrtc_library.cpp, hidden (libkjit exports none),
// and forward to it. When none opens, each call throws UnavailableError saying why (the file and
// the loader's reason; the variables set and what is wrong with them), and the next call looks again.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kjit::cache {
class StoreNotes;
}

namespace kjit::base {

// The path of the libnvrtc opened, opening it now if it is not yet; empty when none opens (then
// nothing is thrown: a later NVRTC call says why).
std::string nvrtc_library_file();

// What NVRTC says of itself that a cache hit needs: its version (the key holds it) and the real
// archs it compiles to (a request's arch is checked against them). Asked once a process, of the
// library open or already loaded; else, where an earlier process asked the same library, read
// from its answer, kept in `notes` (a cache folder's: `nvrtc-<hash>`, with the search's fingerprint
// in it: everything that decides which file an open takes, each file's identity), so that a
// process whose requests all hit never opens NVRTC (~100 MB mapped, its constructors: 6 ms on an
// H200 host, 13 ms on a 2-core VM); else NVRTC is opened and asked, and the answer kept there for
// the next process. The first call of the process
// decides (a request asks with its cache folder's notes before anything else asks: CompileService).
// Throws UnavailableError, as the first NVRTC call does, when none opens.
struct NvrtcFacts {
  int major = 0;
  int minor = 0;
  std::vector<int> archs;      // as nvrtcGetSupportedArchs gives them; empty when NVRTC cannot say
};
const NvrtcFacts& nvrtc_facts(cache::StoreNotes* notes = nullptr);

// The libnvrtc.so.<major> files under a toolkit's root (lib64/, lib/, targets/<arch>/lib/), in that
// order: each path that is there, whatever it is (a file, a folder, a dangling symbolic link).
std::vector<std::filesystem::path> nvrtc_files_in(const std::filesystem::path& root);

// A libnvrtc file to try after every place above (kjit::add_nvrtc_fallback), in the order added;
// a file named twice is tried once.
void add_nvrtc_fallback(std::string file);

}  // namespace kjit::base
