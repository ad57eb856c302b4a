#include "core/compile/include_scanner.hpp"

#include "core/base/source_file.hpp"
#include "core/compile/source/lexer.hpp"

#include <kjit/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <set>

namespace kjit::compile {

IncludeScanner::IncludeScanner(std::vector<std::filesystem::path> include_dirs, std::vector<std::string> in_memory)
    : m_include_dirs(std::move(include_dirs)), m_in_memory(std::move(in_memory)) {}

std::vector<std::pair<std::string, bool>> IncludeScanner::include_lines(const std::string& text) {
  std::vector<std::pair<std::string, bool>> out;
  // The cache key asks on every request: a text with no "include" (nor a splice that could build one) has none.
  if (text.find("include") == std::string::npos && text.find("\\\n") == std::string::npos) return out;
  const std::vector<Token> tokens = lex(text);
  for (std::size_t k = 0; k + 2 < tokens.size(); ++k) {
    const std::string directive = directive_name(text, tokens, k);
    if (directive != "include" && directive != "include_next") continue;
    const Token& target = tokens[k + 2];
    if (target.line_start) continue;
    const bool quoted = target.kind == TokenKind::string && !target.raw && target.text(text).starts_with('"');
    if (target.kind != TokenKind::header_name && !quoted) continue;  // #include MACRO
    const std::string spelled = spelling(text, target);
    if (spelled.size() < 2 || spelled.back() != (quoted ? '"' : '>')) continue;  // unterminated
    out.emplace_back(spelled.substr(1, spelled.size() - 2), quoted);
  }
  return out;
}

std::vector<ScannedHeader> IncludeScanner::scan(const std::string& source, const std::filesystem::path& source_dir,
                                                std::vector<std::filesystem::path>* absent) const {
  std::vector<ScannedHeader> found;
  std::set<std::filesystem::path> seen;
  struct Pending {
    std::string text;
    std::filesystem::path dir;
  };
  std::vector<Pending> work{{source, source_dir}};
  while (!work.empty()) {
    Pending item = std::move(work.back());
    work.pop_back();
    for (const auto& [spelling, quoted] : include_lines(item.text)) {
      if (std::find(m_in_memory.begin(), m_in_memory.end(), spelling) != m_in_memory.end()) continue;
      std::vector<std::filesystem::path> candidates;
      if (quoted && !item.dir.empty()) candidates.push_back(item.dir / spelling);
      for (const auto& d : m_include_dirs) candidates.push_back(d / spelling);
      std::error_code ec;
      for (const auto& c : candidates) {
        if (!std::filesystem::is_regular_file(c, ec)) {
          if (absent && std::find(absent->begin(), absent->end(), c) == absent->end()) absent->push_back(c);
          continue;
        }
        auto canonical = std::filesystem::weakly_canonical(c, ec);
        if (ec) canonical = c;
        if (!seen.insert(canonical).second) break;
        ScannedHeader h;
        h.spelling = spelling;
        h.path = canonical;
        system::FileContent file = base::read_source_file(canonical);
        if (file.error == EFBIG) {  // over KJIT_MAX_SOURCE_SIZE: NVRTC must not read it either
          throw IoError(fmt::format("reading header {}: {}", canonical.string(), file.why()));
        }
        if (!file.ok()) break;  // NVRTC will say what it cannot read
        base::check_no_nul(file.bytes, "header", canonical.string());
        h.content = std::move(file.bytes);
        work.push_back({h.content, canonical.parent_path()});
        found.push_back(std::move(h));
        break;
      }
    }
  }
  return found;
}

}  // namespace kjit::compile
