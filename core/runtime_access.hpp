// kjit::RuntimeAccess: what kjit's own parts may reach of a Runtime beyond the public API: its
// entry store (the tuner's decisions in the disk and remote tiers) and its report channel.
#pragma once

#include <kjit/runtime.hpp>

#include "core/request/entry_store.hpp"

namespace kjit {

struct RuntimeAccess {
  static request::EntryStore& entries(Runtime& runtime);
  // Runtime::report: a message the caller asked for, at info whatever the level.
  static void report(const Runtime& runtime, std::string_view message) { runtime.report(message); }
  // A message through the Runtime's log, at its configured level.
  static void log(const Runtime& runtime, LogLevel level, std::string_view message) { runtime.log(level, message); }
};

}  // namespace kjit
