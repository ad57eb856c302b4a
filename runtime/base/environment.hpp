// kjit::env_flag: a boolean KJIT_* environment variable (unset, empty, 0, false, no
// and off are false; anything else is true).
#pragma once

#include <cstdlib>
#include <string_view>

namespace kjit::base {

inline bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return false;
  std::string_view s = v;
  return !(s.empty() || s == "0" || s == "false" || s == "no" || s == "off");
}

}  // namespace kjit::base
