// compile::lex, the one reader of CUDA source: random token streams written with random
// comments, whitespace and line splices between and inside tokens come back as the same tokens;
// the literals other scanners got wrong ('"', raw strings holding quotes and comment markers,
// digit separators, prefixes); directives, header names and logical lines. No GPU, no NVRTC.
#include "core/compile/source/lexer.hpp"

#include <doctest/doctest.h>

#include <algorithm>

#include <random>
#include <string>
#include <vector>

using kjit::compile::lex;
using kjit::compile::spelling;
using kjit::compile::Token;
using kjit::compile::TokenKind;

namespace {

std::vector<std::string> spellings(std::string_view source) {
  std::vector<std::string> out;
  for (const Token& t : lex(source)) out.push_back(spelling(source, t));
  return out;
}

struct Expected {
  std::string text;
  TokenKind kind;
};

// A random token of each kind, as a compiler would spell it.
Expected random_token(std::mt19937& rng) {
  auto pick = [&rng](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  static const std::vector<std::string> idents = {"x", "cudaMalloc", "__global__", "u8x", "R", "LR_", "_Z3f",
                                                  "uR2", "Lx", "tex2D", "k_9", "s\xc3\xa9"};
  static const std::vector<std::string> numbers = {"1", "0x1F", "1'000'000", "1.5e-3f", ".5", "0b1010'1010",
                                                   "1e+10", "0x1p-3", "42ull", "3.f"};
  static const std::vector<std::string> strings = {R"("a")", R"("\"")", R"("//not a comment")", R"("/*x*/")",
                                                   R"(u8"x")", R"(L"\\")", R"("'")", R"~(R"(a")b")")~",
                                                   R"~(R"d(x)"y)d")~", R"~(u8R"(/* ")")~", R"("")"};
  static const std::vector<std::string> chars = {R"('"')", R"('\'')", R"('a')", R"(L'x')", R"('\\')", R"(u'/')"};
  static const std::vector<std::string> puncts = {"::", "->", "<<<", ">>", "<=>", "...", "##", "{", "}", "(", ")",
                                                  ";", ",", "<", ">", "=", "*", "&&", "+=", "->*", "%", "!"};
  switch (pick(5)) {
    case 0: return {idents[pick(idents.size())], TokenKind::identifier};
    case 1: return {numbers[pick(numbers.size())], TokenKind::number};
    case 2: return {strings[pick(strings.size())], TokenKind::string};
    case 3: return {chars[pick(chars.size())], TokenKind::character};
    default: return {puncts[pick(puncts.size())], TokenKind::punctuator};
  }
}

// Two tokens that would read as one when written with nothing between them.
bool need_space(const std::string& a, const std::string& b) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '\'' ||
                                  c == '"' || static_cast<unsigned char>(c) >= 0x80; };
  return word(a.back()) || word(b.front()) || !std::isalnum(static_cast<unsigned char>(b.front()));
}

}  // namespace

TEST_SUITE("compile::lex") {
  TEST_CASE("random token streams with comments, blanks and splices between and inside tokens come back whole") {
    for (unsigned seed = 1; seed <= 300; ++seed) {
      std::mt19937 rng(seed);
      std::vector<Expected> tokens;
      std::string source;
      const int count = 1 + static_cast<int>(rng() % 40);
      for (int k = 0; k < count; ++k) {
        Expected t = random_token(rng);
        if (!tokens.empty() && need_space(tokens.back().text, t.text)) {
          static const std::vector<std::string> gaps = {" ", "\t", "/* \" ' // */", "  \\\n  ", " /*\n*/ ",
                                                         "// a 'comment \" \n", "\n", " \\\r\n "};
          source += gaps[rng() % gaps.size()];
        }
        // A splice inside an identifier, a number or a punctuator of two or more bytes (not in a
        // raw string, where phase 2 is undone).
        std::string written = t.text;
        if (t.text.size() >= 2 && rng() % 4 == 0 && t.kind != TokenKind::string && t.kind != TokenKind::character) {
          written.insert(1 + rng() % (t.text.size() - 1), "\\\n");
        }
        source += written;
        tokens.push_back(std::move(t));
      }
      if (rng() % 2) source += "// trailing comment";
      const std::vector<Token> got = lex(source);
      CAPTURE(source);
      REQUIRE(got.size() == tokens.size());
      for (std::size_t k = 0; k < got.size(); ++k) {
        CHECK(spelling(source, got[k]) == tokens[k].text);
        CHECK(got[k].kind == tokens[k].kind);
      }
    }
  }

  TEST_CASE("the literals other scanners misread: a quote in a character, raw strings, digit separators") {
    CHECK(spellings(R"(char q() { return '"'; } __global__ void k(float* x);)") ==
          std::vector<std::string>{"char", "q", "(", ")", "{", "return", R"('"')", ";", "}", "__global__", "void",
                                   "k", "(", "float", "*", "x", ")", ";"});
    CHECK(spellings(R"x(auto s = R"(a "quoted" */ // )"; int k;)x") ==
          std::vector<std::string>{"auto", "s", "=", R"x(R"(a "quoted" */ // )")x", ";", "int", "k", ";"});
    CHECK(spellings("int n = 1'000; char c = 'x';") ==
          std::vector<std::string>{"int", "n", "=", "1'000", ";", "char", "c", "=", "'x'", ";"});
    CHECK(spellings("a<<<g, b>>>(x)") == std::vector<std::string>{"a", "<<<", "g", ",", "b", ">>", ">", "(", "x", ")"});
    // An unterminated literal ends at its line; an unterminated comment at the end of the text.
    CHECK(spellings("\"abc\nint x; /* never closed") == std::vector<std::string>{"\"abc", "int", "x", ";"});
  }

  TEST_CASE("directives: the '#' that opens a logical line, continuation lines, header names") {
    const std::string s = "#include <cuda/std/utility>\n"
                          "  #  include_next \"x.h\"\n"
                          "#define CAT(a, b) a ## \\\n b\n"
                          "x # y\n"
                          "#if __has_include(<cstdint>)\n"
                          "#endif\n";
    const auto t = lex(s);
    std::vector<std::string> names;
    for (std::size_t k = 0; k < t.size(); ++k) {
      if (auto n = kjit::compile::directive_name(s, t, k); !n.empty()) names.push_back(n);
    }
    CHECK(names == std::vector<std::string>{"include", "include_next", "define", "if", "endif"});
    CHECK(t[2].kind == TokenKind::header_name);
    CHECK(t[2].text(s) == "<cuda/std/utility>");
    CHECK(t[5].kind == TokenKind::string);
    // "b" on the continuation line still belongs to the #define; "x # y" is no directive.
    const auto b = std::find_if(t.begin(), t.end(), [&](const Token& k) { return k.text(s) == "b"; });
    REQUIRE(b != t.end());
    CHECK(b->directive);
    CHECK_FALSE(b->line_start);
    const auto x = std::find_if(t.begin(), t.end(), [&](const Token& k) { return k.text(s) == "x"; });
    CHECK_FALSE(x->directive);
    // In #if, <cstdint> is not an #include's header name: three tokens.
    const auto has = std::find_if(t.begin(), t.end(), [&](const Token& k) { return k.text(s) == "__has_include"; });
    CHECK((has + 2)->text(s) == "<");
    CHECK((has + 2)->kind == TokenKind::punctuator);
    CHECK(x->line == 5);
    CHECK(has->line == 6);
  }

  TEST_CASE("a spliced name is one identifier with its splice marked, and without_comments keeps lines") {
    const std::string s = "cuda\\\nMalloc(p); /* one\ntwo */ int y; // z\n";
    const auto t = lex(s);
    CHECK(t[0].spliced);
    CHECK(spelling(s, t[0]) == "cudaMalloc");
    const std::string kept = kjit::compile::without_comments(s);
    CHECK(kept.size() == s.size());
    CHECK(kept.find("one") == std::string::npos);
    CHECK(kept.find("int y;") != std::string::npos);
    CHECK(std::count(kept.begin(), kept.end(), '\n') == std::count(s.begin(), s.end(), '\n'));
  }

  TEST_CASE("long inputs read in one pass: half a million unclosed calls before a declaration") {
    std::string s;
    for (int k = 0; k < 500000; ++k) s += "k(";
    s += "__global__ void k(float* x) {}";
    const auto t = lex(s);
    CHECK(t.size() == 1000000 + 10);
    std::string quotes(1 << 20, '"');  // a million empty strings, no quadratic rescans
    CHECK(lex(quotes).size() == (1u << 19));
  }
}
