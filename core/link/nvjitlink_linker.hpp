// kjit::link::NvJitLinker: one nvJitLink link of device code parts into a cubin. libnvJitLink is
// opened on first use (dlopen: its soname, then the toolkit kjit was built with), never at load
// time and never linked: a program that links nothing needs no libnvJitLink. A refused link is
// returned as data (succeeded = false, the error log); a library that cannot be loaded or an API
// failure throws LinkError. Safe to call from several threads at once.
#pragma once

#include <kjit/link.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace kjit::link {

struct LinkPart {
  Link::InputKind kind;
  std::string name;        // given to nvJitLink: its log names the part
  std::string_view bytes;  // not owned
};

struct LinkOutput {
  bool succeeded = false;
  std::string cubin;
  std::string error_log;  // nvJitLink's error log
  std::string info_log;   // its info log (-verbose)
  double link_ms = 0;
};

class NvJitLinker {
public:
  // `options` as nvJitLink takes them ("-arch=sm_90", "-lto", ...).
  static LinkOutput link(const std::vector<LinkPart>& parts, const std::vector<std::string>& options);
  // "13.0"
  static std::string version();
};

}  // namespace kjit::link
