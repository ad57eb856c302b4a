// kjit::RuntimeAccess: how kjit's own parts outside the request path (the tuner) reach a
// Runtime's compile service, to store entries of their own next to compile results.
#pragma once

#include <kjit/runtime.hpp>

#include "runtime/request/compile_service.hpp"

namespace kjit {

struct RuntimeAccess {
  static request::CompileService& service(Runtime& runtime);
};

}  // namespace kjit
