// kjit::base::nvrtc_library_file: NVRTC opened at run time, as libcuda is (core/driver/): libkjit
// records no libnvrtc (no DT_NEEDED), so a program that links libkjit (the CLI, the Python
// extension) starts wherever the toolkit is, and the first NVRTC call opens libnvrtc.so.<major>:
// the one this process already loaded (a program that links NVRTC itself, as kjitConfig.cmake's
// consumers do; the Python package's fallback), else the one in the toolkit KJIT_CUDA_HOME,
// CUDA_HOME or CUDA_PATH names (lib64/, lib/, targets/<arch>/lib/), else where the loader finds it
// (LD_LIBRARY_PATH, libkjit's run path: the toolkit of its build; ldconfig), else in the build's
// toolkit and /usr/local/cuda, else the fallbacks the program named (add_nvrtc_fallback: the Python
// package names pip's CUDA packages'). The nvrtc* functions kjit calls are defined in nvrtc_library.cpp,
// hidden (libkjit exports none), and forward to it. When none opens, each call throws
// UnavailableError naming the variables and where it looked, and the next call looks again.
#pragma once

#include <string>

namespace kjit::base {

// The path of the libnvrtc opened, opening it now if it is not yet; empty when none opens (then
// nothing is thrown: a later NVRTC call says why).
std::string nvrtc_library_file();

// A libnvrtc file to try after every place above (kjit::add_nvrtc_fallback), in the order added;
// a file named twice is tried once.
void add_nvrtc_fallback(std::string file);

}  // namespace kjit::base
