// The lexer against the readers it replaced (tests/support/old_source_readers, verbatim from
// before): over every .cu/.cuh/.h kernel file under tests/data and kernels_src, the #include
// lines, every name the fast path's scan reports, the template kernels, the text without comments
// and each kernel's parameter names. Where they differ, the difference must be one this file
// explains (a construct only the lexer reads right); any other fails, naming file and reader.
#include "core/compile/include_scanner.hpp"
#include "core/compile/source/kernel_declarations.hpp"
#include "core/compile/source/lexer.hpp"
#include "core/compile/source_scan.hpp"
#include "core/compile/template_kernels.hpp"
#include "support/old_source_readers.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace {

const std::filesystem::path k_source_dir = KJIT_SOURCE_DIR;

std::vector<std::filesystem::path> kernel_files() {
  std::vector<std::filesystem::path> out;
  for (const char* root : {"tests/data", "kernels_src"}) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(k_source_dir / root)) {
      const auto ext = e.path().extension();
      if (e.is_regular_file() && (ext == ".cu" || ext == ".cuh" || ext == ".h")) out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string read(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::multiset<std::string> names_of(std::string_view text, bool old) {
  std::multiset<std::string> out;
  auto take = [&out](std::string_view n) {
    out.emplace(n);
    return false;
  };
  if (old) kjit::test::old::first_name(text, take);
  else kjit::compile::first_name(text, take);
  return out;
}

// Whitespace runs collapsed: the old comment stripper dropped line comments, the lexer blanks them.
std::string collapsed(std::string_view s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

// The constructs in which the old readers and the lexer may disagree, each a fact about the text
// (checked here, so that an explanation cannot hide a difference it does not cover).
struct Explanations {
  std::string_view text;
  std::vector<kjit::compile::Token> tokens = kjit::compile::lex(text);

  bool has_spliced_token() const {
    return std::any_of(tokens.begin(), tokens.end(), [](const auto& t) { return t.spliced; });
  }
  bool has_char_with_quote() const {
    return std::any_of(tokens.begin(), tokens.end(), [this](const auto& t) {
      return t.kind == kjit::compile::TokenKind::character && t.text(text).find('"') != std::string_view::npos;
    });
  }
  bool has_directive_word_in_comment() const {
    // An "#include" or a quote that only a comment holds (the old include reader read lines, not tokens).
    const std::string kept = kjit::compile::without_comments(text);
    return kept.find("#include") != text.find("#include") ||
           std::count(kept.begin(), kept.end(), '#') != std::count(text.begin(), text.end(), '#');
  }
};

}  // namespace

TEST_SUITE("compile::lex (against the readers it replaced)") {
  TEST_CASE("over every kernel file, old and new readers agree or differ only where the lexer reads right") {
    const auto files = kernel_files();
    REQUIRE(files.size() >= 20);
    int differences = 0, kernels = 0;
    for (const auto& file : files) {
      const std::string text = read(file);
      const std::string name = std::filesystem::relative(file, k_source_dir).string();
      INFO(name);
      const Explanations why{text};
      auto explain = [&](std::string_view reader, bool explained, std::string_view reason) {
        ++differences;
        CHECK_MESSAGE(explained, name, ": the ", reader, " readers differ and nothing explains it");
        if (explained) MESSAGE(name, ": ", reader, ": ", reason);
      };
      if (kjit::test::old::include_lines(text) != kjit::compile::IncludeScanner::include_lines(text)) {
        explain("#include", why.has_directive_word_in_comment(),
                "an #include line inside a comment, which the old line reader took");
      }
      if (names_of(text, true) != names_of(text, false)) {
        explain("name", why.has_spliced_token() || why.has_char_with_quote() || why.has_directive_word_in_comment(),
                "a spliced name, a '\"' character or a directive in a comment, which the old scan misread");
      }
      if (kjit::test::old::template_kernels(text) != kjit::compile::template_kernels(text)) {
        explain("template kernel", why.has_char_with_quote() || why.has_spliced_token(),
                "a '\"' character or a splice the old code_only misread");
      }
      if (collapsed(kjit::test::old::without_comments(text)) != collapsed(kjit::compile::without_comments(text))) {
        explain("comment", why.has_spliced_token() || why.has_char_with_quote(),
                "a comment's splice or a quote the old stripper read as a literal");
      }
      const kjit::compile::KernelDeclarations declarations(text);
      for (const auto& d : declarations.all()) {
        if (d.is_template) continue;
        ++kernels;
        const auto now = declarations.parameters(d.name, d.parameters.size());
        const auto before = kjit::test::old::parameter_names(text, d.name, d.parameters.size());
        std::optional<std::vector<std::string>> names;
        if (now) {
          names.emplace();
          for (const auto& p : *now) names->push_back(p.name);
        }
        if (names != before) {
          explain(fmt::format("parameter names of {}", d.name), why.has_char_with_quote() || why.has_spliced_token(),
                  fmt::format("old {} new {}", before ? fmt::format("{}", *before) : "none",
                              names ? fmt::format("{}", *names) : "none"));
        }
      }
    }
    MESSAGE(differences, " difference(s) over ", files.size(), " files and ", kernels, " kernels' parameter lists");
    CHECK(kernels >= 10);
    CHECK(differences >= 1);  // the edge-case fixture (tests/data/lexer_fixture) differs, explained
  }
}
