#include "core/request/request_hash.hpp"

namespace kjit::request {

RequestHash request_hash(const Program& program, const CompileOptions& options, int device) {
  RequestHasher s;
  s.num(static_cast<std::uint64_t>(device));
  s.str(program.name());
  s.str(program.source());
  s.str(program.directory().native());
  s.num(program.include_path().size());
  for (const auto& d : program.include_path()) s.str(d.native());
  s.num(program.headers().size());
  for (const auto& [name, content] : program.headers()) {
    s.str(name);
    s.str(content);
  }
  s.num(program.name_expressions().size());
  for (const auto& e : program.name_expressions()) s.str(e);
  s.num(options.arch.is_native() ? 0 : options.arch.is_real() ? 1 : 2);
  s.num(static_cast<std::uint64_t>(options.arch.number()));
  s.str(options.arch.suffix());
  s.str(options.std);
  s.num(options.defines.size());
  for (const auto& d : options.defines) s.str(d);
  s.num(options.include_dirs.size());
  for (const auto& d : options.include_dirs) s.str(d.native());
  s.num((options.fast_math ? 1u : 0u) | (options.line_info ? 2u : 0u) | (options.device_debug ? 4u : 0u));
  s.num(static_cast<std::uint64_t>(options.max_registers));
  s.num(options.flags.size());
  for (const auto& f : options.flags) s.str(f);
  return s.finish();
}

}  // namespace kjit::request
