// kjit::compile::lex: the one reader of CUDA/C++ source text in kjit. It splits a source into
// preprocessing tokens as the C++ standard's translation phases 1-3 do: line splices
// (backslash-newline) joined, comments dropped, string and character literals with their
// prefixes (u8"", L'x'), raw strings (R"d(...)d"), numbers with digit separators (1'000) and
// exponents (1e-5f), header names after #include, and punctuators (CUDA's <<< as one). Each
// token says whether it starts a logical line and whether it lies on a directive's line.
//
// Every consumer that must know what the text says before NVRTC reads it (the #include scan,
// the names a program uses, template kernels, host code, toolkit headers, kernel declarations)
// reads these tokens; none skips comments or literals by hand. Macros are not expanded: a
// caller that cannot decide without the preprocessor asks the compiler. Linear time; never
// throws; any byte sequence is accepted (an unterminated literal or comment ends the text).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::compile {

enum class TokenKind : std::uint8_t {
  identifier,   // also keywords; bytes >= 0x80 count as identifier characters
  number,       // a pp-number: 1, 0x1F, 1'000, 1.5e-3f, .5
  string,       // "..." with any prefix (u8, u, U, L), raw strings included
  character,    // '...' with any prefix
  punctuator,   // ::, ->, <<<, ##, #, {, ...
  header_name,  // <cuda_fp16.h> after #include / #include_next / #import
  other,        // a stray byte: \, `, @ ...
};

struct Token {
  TokenKind kind = TokenKind::other;
  std::uint32_t offset = 0;  // first byte in the source
  std::uint32_t length = 0;  // bytes in the source, line splices inside included
  std::uint32_t line = 1;    // the physical line of the first byte, from 1
  bool line_start = false;   // the first token of its logical line
  bool directive = false;    // on a preprocessor directive's logical line (its '#' too)
  bool spliced = false;      // a backslash-newline lies inside the token
  bool raw = false;          // a raw string literal

  std::string_view text(std::string_view source) const { return source.substr(offset, length); }
  bool is(std::string_view source, std::string_view word) const { return text(source) == word; }
};

// Every token of `source`, in order.
std::vector<Token> lex(std::string_view source);

// The token's text with its line splices removed ("cu\<newline>daMalloc" -> "cudaMalloc").
std::string spelling(std::string_view source, const Token& token);

// `source` with every comment replaced by spaces (its line breaks kept, so that line numbers
// stay), everything else byte for byte.
std::string without_comments(std::string_view source);

// The directive a '#' token opens ("include", "define", "ifdef", ...; "" for a null directive
// or when `at` is no directive's '#'): the spelling of the identifier after it.
std::string directive_name(std::string_view source, const std::vector<Token>& tokens, std::size_t at);

// The index past the last token of the logical line that token `at` lies on.
std::size_t end_of_line(const std::vector<Token>& tokens, std::size_t at);

}  // namespace kjit::compile
