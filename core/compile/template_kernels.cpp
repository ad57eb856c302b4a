#include "core/compile/template_kernels.hpp"

#include "core/compile/source/lexer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <regex>

namespace kjit::compile {
std::vector<std::string> template_kernels(std::string_view source) {
  static const std::regex k_kernel(
      R"(^template\s*<[^{;]*>\s*(?:(?:static|inline|__forceinline__|__noinline__)\s+)*__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\()");
  // The code's tokens: directives, comments and literals count for nothing here.
  std::vector<Token> tokens;
  for (const Token& t : lex(source)) {
    if (!t.directive) tokens.push_back(t);
  }
  auto text = [&](std::size_t k) { return spelling(source, tokens[k]); };
  auto is_punct = [&](std::size_t k, std::string_view p) {
    return tokens[k].kind == TokenKind::punctuator && tokens[k].is(source, p);
  };
  // One entry per open brace: the namespace names it opened ("" for another block).
  std::vector<std::vector<std::string>> scopes;
  std::vector<std::string> out;
  auto qualified = [&scopes](const std::string& name) {
    std::string q;
    for (const auto& scope : scopes) {
      for (const auto& n : scope) q += n + "::";
    }
    return q + name;
  };
  auto at_namespace_scope = [&scopes] {
    for (const auto& scope : scopes) {
      if (scope.empty()) return false;
    }
    return true;
  };
  std::vector<std::string> pending;  // the names of a `namespace a::b` before its brace
  bool namespace_open = false;
  for (std::size_t k = 0; k < tokens.size(); ++k) {
    if (is_punct(k, "{")) {
      scopes.push_back(namespace_open ? pending : std::vector<std::string>{});
      if (namespace_open && pending.empty()) scopes.back().push_back("");  // anonymous: not named
      namespace_open = false;
      pending.clear();
      continue;
    }
    if (is_punct(k, "}")) {
      if (!scopes.empty()) scopes.pop_back();
      continue;
    }
    if (is_punct(k, ";")) {  // `namespace a = b;`
      namespace_open = false;
      pending.clear();
      continue;
    }
    if (tokens[k].kind != TokenKind::identifier) continue;
    const std::string word = text(k);
    if (word == "namespace") {
      namespace_open = true;
      pending.clear();
      std::size_t p = k + 1;
      while (p < tokens.size() && tokens[p].kind == TokenKind::identifier) {
        if (const std::string part = text(p); part != "inline") pending.push_back(part);
        ++p;
        if (p < tokens.size() && is_punct(p, "::")) ++p;
      }
      k = p - 1;
      continue;
    }
    if (word == "template" && at_namespace_scope()) {
      // The declaration up to its body or its ';', one space between tokens.
      std::string declaration;
      for (std::size_t p = k; p < tokens.size() && !is_punct(p, "{") && !is_punct(p, ";"); ++p) {
        if (!declaration.empty()) declaration += ' ';
        declaration += text(p);
      }
      std::smatch m;
      if (std::regex_search(declaration, m, k_kernel)) {
        std::string name = qualified(m[1].str());
        // An anonymous namespace's part is not written: "::" pieces left by it collapse.
        for (std::size_t at; (at = name.find("::::")) != std::string::npos;) name.erase(at, 2);
        if (name.starts_with("::")) name.erase(0, 2);
        if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
      }
    }
  }
  return out;
}

std::string name_expression_hint(std::string_view log, std::string_view source,
                                 const std::vector<std::string>& expressions) {
  if (log.find("Error in parsing name expression") == std::string_view::npos) return {};
  const std::vector<std::string> kernels = template_kernels(source);
  std::string out;
  for (const std::string& expression : expressions) {
    const std::string_view e = expression;
    std::size_t start = e.find_first_not_of(" \t");
    if (start == std::string_view::npos) continue;
    const std::string_view rest = e.substr(start);
    const std::string_view name = rest.substr(0, rest.find_first_of("< \t("));
    if (name.find("::") != std::string_view::npos) continue;  // already qualified
    for (const std::string& kernel : kernels) {
      const std::size_t colons = kernel.rfind("::");
      if (colons == std::string::npos || std::string_view(kernel).substr(colons + 2) != name) continue;
      out += fmt::format("kjit: the name expression \"{}\" is looked up from the global namespace; the template "
                         "kernel {} is in namespace {}: name it \"{}{}\"\n",
                         expression, name, kernel.substr(0, colons), kernel, rest.substr(name.size()));
      break;
    }
  }
  if (out.empty()) {
    out = "kjit: a name expression is looked up from the global namespace: a kernel in a namespace is named with "
          "it (\"ns::kernel<float>\")\n";
  }
  return out;
}

}  // namespace kjit::compile
