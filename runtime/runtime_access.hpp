// kjit::RuntimeAccess: what kjit's own parts above the facade (the tuner) may reach of a
// Runtime's request path: its entry store (the disk and remote tiers for entries of their own).
#pragma once

#include <kjit/runtime.hpp>

#include "runtime/request/entry_store.hpp"

namespace kjit {

struct RuntimeAccess {
  static request::EntryStore& entries(Runtime& runtime);
};

}  // namespace kjit
