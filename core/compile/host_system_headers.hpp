// kjit::compile::HostSystemHeaders: the system headers a program's host code includes that NVRTC
// cannot open (<strings.h>, <sys/resource.h>, <sys/syscall.h>, <omp.h>, <bits/stdc++.h>, ...). nvcc
// compiles a .cu file with the host's headers; NVRTC has none of them, and kjit writes its own only
// for what device code uses (standard_headers). One rule instead of a list: when NVRTC says it
// cannot open a header that the host's C and C++ compilers have in their system folders (and no
// folder NVRTC was given has), NvrtcCompiler serves it empty and compiles again. Device code that
// used it then fails naming what it misses, with kjit's note naming the header; host code that used
// it is left out as host code is (host_functions). Never throws.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kjit::compile {

class HostSystemHeaders {
public:
  // The headers NVRTC's `log` says it cannot open (`catastrophic error: cannot open source file
  // "X"`) that are host system headers: found in system_folders().
  static std::vector<std::string> unopened(std::string_view log);

  // Whether `spelling` ("sys/resource.h") names a file in one of system_folders().
  static bool is_host_header(std::string_view spelling);

  // The host compilers' system include folders that exist here, in their search order: /usr/local/include,
  // /usr/include/<multiarch>, /usr/include, libstdc++'s and GCC's own (stdarg.h, omp.h). Found once.
  static const std::vector<std::string>& system_folders();

  // What a served header holds: a comment saying why it is empty.
  static std::string_view served_text();

  // kjit's note for the log: which headers were served empty, and why.
  static std::string explain(const std::vector<std::string>& served);
};

}  // namespace kjit::compile
