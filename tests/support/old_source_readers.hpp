// The readers of CUDA source kjit had before its one lexer (compile::lex), each as it was: the
// name scan (source_scan's first_name), the #include lines, the template-kernel scan, the
// toolkit headers' comment stripper and the kernel-declaration reader's names. For the
// differential test alone (tests/unit/test_source_differential.cpp).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kjit::test::old {

std::string first_name(std::string_view text, const std::function<bool(std::string_view)>& wanted);
std::vector<std::pair<std::string, bool>> include_lines(const std::string& text);
std::vector<std::string> template_kernels(std::string_view source);
std::string without_comments(std::string_view source);
std::optional<std::vector<std::string>> parameter_names(std::string_view source, const std::string& plain,
                                                        std::size_t arity);

}  // namespace kjit::test::old
