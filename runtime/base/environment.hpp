// kjit::env_flag: a boolean KJIT_* environment variable, read by cache::parse_flag (the one
// parser of flag values): unset, empty, 0, false, no and off are false; 1, true, yes and on are
// true, in any case; anything else is a UsageError naming the variable and its value.
#pragma once

#include <kjit/error.hpp>

#include "cache/config.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <string_view>

namespace kjit::base {

inline bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return false;
  if (auto on = cache::parse_flag(v)) return *on;
  throw UsageError(fmt::format("reading {}=\"{}\": expected 1, 0, true, false, yes, no, on or off", name, v));
}

}  // namespace kjit::base
