#include "core/request/request_hash.hpp"

#include "core/compile/options/option_fields.hpp"

#include <type_traits>

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
  // Every field of the options, in the table's order (no field can be left out).
  compile::for_each_option_field([&](const auto& f) {
    const auto& v = options.*f.member;
    using T = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<T, Arch>) {
      s.num(v.is_native() ? 0 : v.is_real() ? 1 : 2);
      s.num(static_cast<std::uint64_t>(v.number()));
      s.str(v.suffix());
    } else if constexpr (std::is_same_v<T, std::string>) {
      s.str(v);
    } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, int>) {
      s.num(static_cast<std::uint64_t>(static_cast<std::int64_t>(v)));
    } else if constexpr (std::is_same_v<T, std::vector<std::filesystem::path>>) {
      s.num(v.size());
      for (const auto& d : v) s.str(d.native());
    } else {
      static_assert(std::is_same_v<T, std::vector<std::string>>);
      s.num(v.size());
      for (const auto& item : v) s.str(item);
    }
  });
  return s.finish();
}

}  // namespace kjit::request
