#include "core/compile/source_scan.hpp"

#include "core/compile/source/lexer.hpp"

namespace kjit::compile {

std::string first_name(std::string_view t, const std::function<bool(std::string_view)>& wanted) {
  const std::vector<Token> tokens = lex(t);
  for (std::size_t k = 0; k < tokens.size(); ++k) {
    const Token& token = tokens[k];
    if (token.kind == TokenKind::punctuator && token.is(t, k_device_launch)) {
      if (wanted(k_device_launch)) return std::string(k_device_launch);
      continue;
    }
    if (token.kind != TokenKind::identifier) continue;
    // "#include MACRO": the directive's name followed by an identifier, not a header name.
    if (k >= 1 && tokens[k - 1].kind == TokenKind::identifier && tokens[k].directive && k >= 2 &&
        directive_name(t, tokens, k - 2).starts_with("include") && !tokens[k].line_start) {
      if (wanted(k_macro_include)) return std::string(k_macro_include);
    }
    if (k >= 1 && !directive_name(t, tokens, k - 1).empty()) {
      const std::string directive = directive_name(t, tokens, k - 1);
      if (directive == "include" || directive == "include_next" || directive == "import") continue;
    }
    const std::string name = spelling(t, token);
    if (wanted(name)) return name;
  }
  return {};
}

}  // namespace kjit::compile
