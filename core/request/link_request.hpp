// kjit::request::PreparedLink and link(): a Link as one request of the compile service. Its key
// is computed from its parts' keys and contents without compiling anything, so a linked result
// in the cache is a hit like any other; on a miss each program part is a request of its own
// (cached as relocatable code, -rdc=true, or LTO-IR with -dlto), then nvJitLink runs once per key
// in a process, without the per-key locks across processes and nodes (Storage::Fill::unlocked).
// Throws LinkError (the log, the inputs named), CompileError for a part NVRTC rejects, and
// UsageError for a virtual arch.
#pragma once

#include <kjit/compile_options.hpp>
#include <kjit/compile_result.hpp>
#include <kjit/link.hpp>
#include <kjit/program.hpp>

#include "core/request/compile_service.hpp"

#include <string>
#include <vector>

namespace kjit::request {

struct PreparedLink {
  std::vector<std::string> options;     // nvJitLink's: -arch=sm_XX, -lto, then the link's own
  std::vector<PreparedRequest> parts;   // one per program, compiled with -rdc=true (and -dlto)
  PreparedRequest request;              // the link's flags (its options) and key
  Program description{"", ""};          // what dumps and messages see: the name, the inputs listed

  // `arch` is resolved (a real arch). The parts' options are `options`, relocatable.
  static PreparedLink make(const Link& link, const compile::NormalizedOptions& options, const Arch& arch,
                           compile::FastPath fast, cache::Hasher::Fields fields = cache::Hasher::Fields::drop);
};

// The linked result from the cache, or linked now (its parts from the cache or NVRTC).
CompileResult link(CompileService& service, const Link& link, const Arch& arch, const PreparedLink& prepared);

}  // namespace kjit::request
