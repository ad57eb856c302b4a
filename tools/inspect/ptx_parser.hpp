// Pieces of the PTX parser that the normalizer and summary reuse (parse_ptx itself is public,
// in kjit/inspect.hpp). Internal to runtime/inspect; nothing throws.
#pragma once

#include <kjit/tools/inspect.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace kjit::inspect {

// The registers one `.reg` statement declares (empty when it is not one).
std::vector<RegisterDecl> parse_reg_declaration(std::string_view statement);
// Non-empty trimmed lines.
std::vector<std::string> body_lines(std::string_view body);

}  // namespace kjit::inspect

namespace kjit::inspect {
// The lines of one function as to_ptx renders it (defined with the normalizer).
std::vector<std::string> function_lines(const PtxFunction& f);
}  // namespace kjit::inspect
