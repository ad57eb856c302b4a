// libFuzzer target: the PTX parser, normalizer, summary, ptxas log parser and diff must not
// crash, hang or throw on any input, and normalizing must be idempotent on text whose
// brackets balance (the shape of all PTX; for unbalanced text only the first property holds).
#include "tools/inspect/ptx_text.hpp"

#include <kjit/tools/inspect.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

bool balanced(std::string_view text) {
  const std::string stripped = kjit::inspect::text::strip_comments(text);
  int braces = 0, parens = 0, brackets = 0;
  for (char c : stripped) {
    if (c == '"') return false;  // string literals: not worth modelling here
    braces += c == '{' ? 1 : c == '}' ? -1 : 0;
    parens += c == '(' ? 1 : c == ')' ? -1 : 0;
    brackets += c == '[' ? 1 : c == ']' ? -1 : 0;
    if (braces < 0 || parens < 0 || brackets < 0) return false;
  }
  return braces == 0 && parens == 0 && brackets == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  namespace ins = kjit::inspect;
  const ins::PtxModule module = ins::parse_ptx(input);
  (void)module.kernel_names();
  const std::string once = ins::normalize(input);
  const std::string twice = ins::normalize(once);
  if (once != twice && balanced(input)) std::abort();  // normalize must be idempotent
  (void)ins::summarize(input, input);
  (void)ins::resources_table(ins::parse_ptxas_log(input));
  // Diff the input against its first half: exercises dtl and the renderers.
  const ins::DiffResult d = ins::diff(input.substr(0, size / 2), input);
  (void)d.to_text(ins::Color::always);
  (void)d.to_json();
  return 0;
}
