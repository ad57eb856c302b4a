#include "core/compile/source/kernel_declarations.hpp"

#include "core/compile/source/lexer.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <unordered_map>

namespace kjit::compile {
namespace {

struct Word {
  std::string_view text;  // into the source, or into `spelled` for a spliced token
  TokenKind kind;
};

// The code's words (directives left out), object-like macros whose replacement holds __global__
// or extern "C" replaced by that replacement. `spelled` keeps the spliced tokens' spellings.
std::vector<Word> code_words(std::string_view source, std::deque<std::string>& spelled) {
  const std::vector<Token> tokens = lex(source);
  auto word = [&](const Token& t) {
    if (!t.spliced) return Word{t.text(source), t.kind};
    spelled.push_back(spelling(source, t));
    return Word{spelled.back(), t.kind};
  };
  std::unordered_map<std::string_view, std::vector<Word>> macros;
  std::vector<Word> out;
  out.reserve(tokens.size());
  for (std::size_t k = 0; k < tokens.size(); ++k) {
    const Token& t = tokens[k];
    if (t.directive) {
      if (directive_name(source, tokens, k) == "define" && k + 2 < tokens.size() && !tokens[k + 2].line_start) {
        const Token& name = tokens[k + 2];
        const bool function_like = k + 3 < tokens.size() && !tokens[k + 3].line_start &&
                                   tokens[k + 3].is(source, "(") && tokens[k + 3].offset == name.offset + name.length;
        const std::size_t end = end_of_line(tokens, k);
        std::vector<Word> replacement;
        bool relevant = false;
        for (std::size_t r = k + 3; r < end && !function_like; ++r) {
          replacement.push_back(word(tokens[r]));
          relevant = relevant || replacement.back().text == "__global__" || replacement.back().text == "extern";
        }
        if (relevant) macros[word(name).text] = std::move(replacement);
        k = end - 1;
      }
      continue;
    }
    Word w = word(t);
    if (w.kind == TokenKind::identifier) {
      if (auto m = macros.find(w.text); m != macros.end()) {
        out.insert(out.end(), m->second.begin(), m->second.end());
        continue;
      }
    }
    out.push_back(w);
  }
  return out;
}

bool builtin_type_word(std::string_view w) {
  static constexpr std::array<std::string_view, 16> k_words = {
      "int", "char", "float", "double", "long", "short", "unsigned", "signed", "bool", "void",
      "const", "volatile", "__restrict__", "__restrict", "struct", "class"};
  return std::find(k_words.begin(), k_words.end(), w) != k_words.end();
}

// A parameter's words as a declared parameter: the type and the name.
DeclaredParameter parameter_of(const std::vector<Word>& words, std::size_t from, std::size_t to) {
  std::size_t end = to;
  int depth = 0;
  for (std::size_t k = from; k < to; ++k) {  // a default argument is not part of the type
    const std::string_view w = words[k].text;
    if (w == "(" || w == "[" || w == "<" || w == "{") ++depth;
    else if (w == ")" || w == "]" || w == ">" || w == "}") --depth;
    else if (w == ">>") depth -= 2;
    else if (w == "=" && depth == 0) {
      end = k;
      break;
    }
  }
  bool array = false;
  for (std::size_t k = from; k < end; ++k) {
    if (words[k].text == "[") {
      array = true;
      end = k;
      break;
    }
  }
  DeclaredParameter p;
  std::size_t type_end = end;
  if (end > from + 1 && words[end - 1].kind == TokenKind::identifier && !builtin_type_word(words[end - 1].text)) {
    p.name = std::string(words[end - 1].text);
    type_end = end - 1;
  }
  for (std::size_t k = from; k < type_end; ++k) {
    if (!p.type.empty()) p.type += ' ';
    p.type.append(words[k].text);
  }
  if (array) p.type += " *";
  return p;
}

}  // namespace

KernelDeclarations::KernelDeclarations(std::string_view source) {
  std::deque<std::string> spelled;
  const std::vector<Word> words = code_words(source, spelled);
  // The ')' that closes each '(' (one pass, a stack).
  std::vector<std::size_t> close(words.size(), words.size());
  std::vector<std::size_t> open;
  for (std::size_t k = 0; k < words.size(); ++k) {
    if (words[k].kind != TokenKind::punctuator) continue;
    if (words[k].text == "(") open.push_back(k);
    else if (words[k].text == ")" && !open.empty()) {
      close[open.back()] = k;
      open.pop_back();
    }
  }
  struct Scope {
    enum Kind { name_space, extern_c, other } kind;
    std::string name;
  };
  std::vector<Scope> scopes;
  bool pending_namespace = false, pending_extern_c = false;
  std::string pending_name;
  bool global = false, extern_c = false, is_template = false, named = false;
  auto reset = [&] { global = extern_c = is_template = named = false; };
  auto namespace_scope = [&] {
    return std::all_of(scopes.begin(), scopes.end(), [](const Scope& s) { return s.kind != Scope::other; });
  };
  for (std::size_t k = 0; k < words.size(); ++k) {
    const Word& w = words[k];
    if (w.kind == TokenKind::punctuator) {
      if (w.text == "{") {
        if (pending_namespace) scopes.push_back({Scope::name_space, pending_name});
        else if (pending_extern_c && !global) scopes.push_back({Scope::extern_c, {}});
        else scopes.push_back({Scope::other, {}});
        pending_namespace = pending_extern_c = false;
        pending_name.clear();
        reset();
      } else if (w.text == "}") {
        if (!scopes.empty()) scopes.pop_back();
        reset();
      } else if (w.text == ";") {
        pending_namespace = pending_extern_c = false;
        reset();
      } else if (w.text == "(" && global && !named && namespace_scope() && k > 0 &&
                 words[k - 1].kind == TokenKind::identifier) {
        const std::string_view name = words[k - 1].text;
        if (name == "__launch_bounds__" || name == "__cluster_dims__" || name == "__maxnreg__" ||
            name == "__attribute__" || name == "__declspec" || name == "alignas" || name == "__align__") {
          if (close[k] < words.size()) k = close[k];
          continue;
        }
        named = true;
        KernelDeclaration d;
        d.name = std::string(name);
        for (const Scope& s : scopes) {
          if (s.kind == Scope::name_space && !s.name.empty()) d.qualified += s.name + "::";
          if (s.kind == Scope::extern_c) d.extern_c = true;
        }
        d.qualified += name;
        d.extern_c = d.extern_c || extern_c;
        d.is_template = is_template;
        const std::size_t end = close[k];
        if (end >= words.size()) break;
        std::size_t start = k + 1;
        int depth = 0;
        const bool empty = end == k + 1 || (end == k + 2 && words[k + 1].text == "void");
        for (std::size_t p = k + 1; p <= end && !empty; ++p) {
          const std::string_view t = words[p].text;
          if (p < end && (t == "(" || t == "[" || t == "<" || t == "{")) ++depth;
          else if (p < end && (t == ")" || t == "]" || t == ">" || t == "}")) --depth;
          else if (p < end && t == ">>") depth -= 2;
          else if (p == end || (t == "," && depth <= 0)) {
            d.parameters.push_back(parameter_of(words, start, p));
            start = p + 1;
          }
        }
        m_kernels.push_back(std::move(d));
        k = end;
      }
      continue;
    }
    if (w.kind == TokenKind::string && w.text == "\"C\"" && k > 0 && words[k - 1].text == "extern") {
      extern_c = true;
      pending_extern_c = true;
      continue;
    }
    if (w.kind != TokenKind::identifier) continue;
    if (w.text == "__global__") global = true;
    else if (w.text == "template") is_template = true;
    else if (w.text == "namespace") {
      pending_namespace = true;
      pending_name.clear();
      for (std::size_t p = k + 1; p < words.size() && words[p].kind == TokenKind::identifier; p += 2) {
        if (words[p].text != "inline") {
          if (!pending_name.empty()) pending_name += "::";
          pending_name.append(words[p].text);
        }
        k = p;
        if (p + 1 >= words.size() || words[p + 1].text != "::") break;
      }
    }
  }
}

std::optional<std::vector<DeclaredParameter>> KernelDeclarations::parameters(std::string_view name,
                                                                             std::size_t arity) const {
  std::optional<std::vector<DeclaredParameter>> chosen;
  for (const KernelDeclaration& d : m_kernels) {
    if (d.name != name || d.parameters.size() != arity) continue;
    if (chosen) {
      const bool same = std::equal(chosen->begin(), chosen->end(), d.parameters.begin(), [](const auto& a, const auto& b) {
        return a.type == b.type && (a.name == b.name || a.name.empty() || b.name.empty());
      });
      if (!same) return std::nullopt;
      for (std::size_t i = 0; i < arity; ++i) {
        if ((*chosen)[i].name.empty()) (*chosen)[i].name = d.parameters[i].name;
      }
      continue;
    }
    chosen = d.parameters;
  }
  return chosen;
}

}  // namespace kjit::compile
