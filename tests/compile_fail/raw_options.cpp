// Compiles as the control; with KJIT_RAW_OPTIONS it hands the request path raw CompileOptions
// where it takes them normalized once (compile::NormalizedOptions, which only normalize() makes),
// which must not compile: no part below the facade can normalize a request a second time, or
// be given one that was never normalized.
#include "core/compile/option_marshalling.hpp"
#include "core/request/compile_service.hpp"

kjit::request::PreparedRequest prepare(const kjit::Program& program, const kjit::CompileOptions& raw) {
#ifdef KJIT_RAW_OPTIONS
  return kjit::request::PreparedRequest::make(program, raw, kjit::Arch::sm(90), kjit::compile::FastPath::on);
#else
  return kjit::request::PreparedRequest::make(program, kjit::compile::normalize(raw), kjit::Arch::sm(90), kjit::compile::FastPath::on);
#endif
}
