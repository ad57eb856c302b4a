// fuzz_source_lex: compile::lex and its readers on arbitrary bytes: no crash, no throw; tokens in
// order, non-empty, inside the text and apart; without_comments keeps the length and every line
// break; a token's spelling is never longer than its bytes; KernelDeclarations and the #include scan
// finish on anything.
// Run: fuzz_source_lex -max_total_time=300 -max_len=65536 CORPUS_DIR (seed it with .cu files)
#include "core/compile/include_scanner.hpp"
#include "core/compile/source/kernel_declarations.hpp"
#include "core/compile/source/lexer.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto tokens = kjit::compile::lex(text);
  std::size_t end = 0;
  for (const auto& t : tokens) {
    if (t.length == 0 || t.offset < end || t.offset + t.length > size) std::abort();
    if (kjit::compile::spelling(text, t).size() > t.length) std::abort();
    end = t.offset + t.length;
  }
  const std::string kept = kjit::compile::without_comments(text);
  if (kept.size() != size) std::abort();
  for (std::size_t i = 0; i < size; ++i) {
    if ((text[i] == '\n') != (kept[i] == '\n')) std::abort();
  }
  (void)kjit::compile::KernelDeclarations(text).all();
  (void)kjit::compile::IncludeScanner::include_lines(std::string(text));
  return 0;
}
