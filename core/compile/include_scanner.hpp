// kjit::compile::IncludeScanner: finds the user headers a source reaches through #include (read
// from its tokens, compile::lex: an #include in a comment or a string is none),
// for the cache key. It reads every include line, whatever the conditionals around it (an
// over-approximation), resolves "..." relative to the including file and then along the user
// include dirs, <...> along the user include dirs; what is not found there is a toolkit or
// system header, covered by the toolkit version. Unreadable files are skipped, never thrown.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace kjit::compile {

struct ScannedHeader {
  std::string spelling;             // as written in the #include, relative to its root
  std::filesystem::path path;       // where it was found
  std::string content;
};

class IncludeScanner {
public:
  // `in_memory`: names of headers given with the program; they are hashed separately and
  // are not looked up on disk.
  IncludeScanner(std::vector<std::filesystem::path> include_dirs, std::vector<std::string> in_memory);

  // Every user header reachable from `source` (whose own directory is `source_dir`, or empty),
  // each once, in the order first reached. `absent`, when given, gets every place looked at
  // before the header was found (or, for one not found, every place looked at): a file that
  // appears there later would shadow what NVRTC reads now (hot reload watches them).
  std::vector<ScannedHeader> scan(const std::string& source, const std::filesystem::path& source_dir,
                                  std::vector<std::filesystem::path>* absent = nullptr) const;

  // The targets of the #include lines of `text`: (spelling, quoted).
  static std::vector<std::pair<std::string, bool>> include_lines(const std::string& text);

private:
  std::vector<std::filesystem::path> m_include_dirs;
  std::vector<std::string> m_in_memory;
};

}  // namespace kjit::compile
