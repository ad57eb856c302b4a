#include "core/compile/scan/nvcc_environment.hpp"

#include "core/base/source_file.hpp"
#include "core/compile/nvrtc/nvrtc_info.hpp"
#include "core/compile/scan/include_scanner.hpp"
#include "core/compile/scan/source_scan.hpp"
#include "core/compile/headers/standard_headers.hpp"
#include "core/compile/source/lexer.hpp"

#include <algorithm>
#include <array>
#include <set>
#include <unordered_set>
#include <vector>

namespace kjit::compile {
namespace {

// Words of the environment's headers that declare nothing: the language's and the
// preprocessor's, and the execution spaces.
constexpr std::array<std::string_view, 31> k_not_declared = {
    "bool",     "char",   "class",    "const",   "constexpr", "define",    "defined",  "double",
    "else",     "endif",  "float",    "if",      "ifdef",     "ifndef",    "inline",   "int",
    "long",     "namespace", "noexcept", "once", "pragma",    "return",    "short",    "static",
    "struct",   "template", "typedef", "unsigned", "using", "__host__", "__device__"};

// Every other identifier of __kjit_nvcc.h and the kjit headers it includes.
std::unordered_set<std::string> environment_names() {
  std::unordered_set<std::string> names;
  const auto& files = standard_header_files();
  std::vector<std::string_view> work{k_nvcc_environment_header};
  std::set<std::string_view> seen;
  while (!work.empty()) {
    const std::string_view name = work.back();
    work.pop_back();
    if (!seen.insert(name).second) continue;
    const auto it = std::find_if(files.begin(), files.end(), [name](const auto& f) { return f.first == name; });
    if (it == files.end()) continue;
    const std::string content(it->second);
    first_name(content, [&names](std::string_view id) {
      if (std::find(k_not_declared.begin(), k_not_declared.end(), id) == k_not_declared.end()) names.emplace(id);
      return false;
    });
    // A function-like macro's parameters (INT8_C(X)) are no names of the environment.
    const std::vector<Token> tokens = lex(content);
    for (std::size_t i = 0; i + 3 < tokens.size(); ++i) {
      if (!tokens[i].directive || tokens[i].text(content) != "#" || directive_name(content, tokens, i) != "define") continue;
      const Token& macro = tokens[i + 2];
      if (tokens[i + 3].text(content) != "(" || tokens[i + 3].offset != macro.offset + macro.length) continue;
      for (std::size_t k = i + 4; k < tokens.size() && tokens[k].text(content) != ")"; ++k) {
        if (tokens[k].kind == TokenKind::identifier) names.erase(std::string(tokens[k].text(content)));
      }
    }
    for (const auto& [spelling, quoted] : IncludeScanner::include_lines(content)) {
      const auto inc = std::find_if(files.begin(), files.end(), [&](const auto& f) { return f.first == spelling; });
      if (inc != files.end()) work.push_back(inc->first);
    }
  }
  return names;
}

// Every identifier of the toolkit's cuda_device_runtime_api.h.
std::unordered_set<std::string> device_runtime_names() {
  std::unordered_set<std::string> names;
  for (const auto& dir : NvrtcInfo::toolkit_include_dirs()) {
    system::FileContent f = base::read_source_file(dir / "cuda_device_runtime_api.h");
    if (!f.ok()) continue;
    first_name(f.bytes, [&names](std::string_view id) {
      if (id.starts_with("cuda")) names.emplace(id);
      return false;
    });
    break;
  }
  return names;
}

}  // namespace

std::string NvccEnvironment::device_runtime_name(std::string_view log) {
  static const std::unordered_set<std::string> names = device_runtime_names();
  constexpr std::string_view marker = "error: identifier \"";
  for (std::size_t at = log.find(marker); at != std::string_view::npos; at = log.find(marker, at + 1)) {
    const std::size_t start = at + marker.size();
    const std::size_t end = log.find('"', start);
    if (end == std::string_view::npos) break;
    std::string name(log.substr(start, end - start));
    if (log.substr(end).starts_with("\" is undefined") && names.count(name) != 0) return name;
  }
  return {};
}

std::string NvccEnvironment::name_used(std::string_view text) {
  static const std::unordered_set<std::string> names = environment_names();
  return std::string(first_name(text, [](std::string_view id) {
    return id == k_macro_include || names.count(std::string(id)) != 0;
  }));
}

}  // namespace kjit::compile
