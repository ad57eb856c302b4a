// Text helpers shared by the PTX parser, normalizer and summary: comment removal, trimming,
// whitespace collapsing, identifier scanning. Internal to runtime/inspect; nothing throws.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kjit::inspect::text {

// The text with `//` and `/* */` comments removed (string literals respected); newlines
// inside block comments are kept so that line structure survives.
std::string strip_comments(std::string_view ptx);
std::vector<std::string_view> split_lines(std::string_view text);
std::string_view trim(std::string_view s);
// Runs of spaces and tabs become one space; leading and trailing ones go.
std::string collapse_spaces(std::string_view s);
bool starts_with_word(std::string_view s, std::string_view word);

bool is_ident_start(char c);
bool is_ident_char(char c);
// The identifier starting at s[pos] (empty when none).
std::string_view ident_at(std::string_view s, std::size_t pos);
bool is_digit(char c);

}  // namespace kjit::inspect::text
