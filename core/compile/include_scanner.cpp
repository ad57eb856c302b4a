#include "core/compile/include_scanner.hpp"

#include "core/base/source_file.hpp"

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
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::size_t i = pos;
    auto skip_space = [&] { while (i < end && (text[i] == ' ' || text[i] == '\t')) ++i; };
    skip_space();
    if (i < end && text[i] == '#') {
      ++i;
      skip_space();
      if (text.compare(i, 7, "include") == 0) {
        i += 7;
        skip_space();
        if (i < end && (text[i] == '"' || text[i] == '<')) {
          char close = text[i] == '"' ? '"' : '>';
          std::size_t close_pos = text.find(close, i + 1);
          if (close_pos != std::string::npos && close_pos < end) {
            out.emplace_back(text.substr(i + 1, close_pos - i - 1), close == '"');
          }
        }
      }
    }
    pos = end + 1;
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
