#include "core/request/cache_key.hpp"

#include "core/compile/include_scanner.hpp"
#include "core/compile/nvrtc_compiler.hpp"

namespace kjit::request {
namespace {

bool identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Whether `text` writes something that puts the name of the file it is expanded in into the
// output: __FILE__, __BASE_FILE__, assert (whose message holds __FILE__) or a macro ending in
// _ASSERT (CCCL's, CUB's, a user's own).
bool may_expand_file_name(std::string_view text) {
  if (text.find("__FILE__") != std::string_view::npos || text.find("__BASE_FILE__") != std::string_view::npos) {
    return true;
  }
  for (std::size_t pos = text.find("assert"); pos != std::string_view::npos; pos = text.find("assert", pos + 1)) {
    const bool ends = pos + 6 == text.size() || !identifier_char(text[pos + 6]);
    if (ends && (pos == 0 || !identifier_char(text[pos - 1]))) return true;  // assert
  }
  for (std::size_t pos = text.find("_ASSERT"); pos != std::string_view::npos; pos = text.find("_ASSERT", pos + 1)) {
    if (pos + 7 == text.size() || !identifier_char(text[pos + 7])) return true;  // _CCCL_ASSERT
  }
  return false;
}

// The options that write the program's name into the output: line info and debug info (the
// .file directive), and LTO-IR (its module's source file name).
bool options_hold_file_name(const std::vector<std::string>& canonical_flags) {
  for (const auto& f : canonical_flags) {
    if (f == "--generate-line-info" || f == "--device-debug" || f == "-dlto") return true;
  }
  return false;
}

}  // namespace

std::string_view CacheKey::file_name(std::string_view program_name) {
  const std::size_t slash = program_name.find_last_of('/');
  if (slash == std::string_view::npos || slash + 1 == program_name.size()) return program_name;
  return program_name.substr(slash + 1);
}

using compile::IncludeScanner;
using compile::NvrtcCompiler;
using compile::ScannedHeader;

CacheKey CacheKey::compute(const Program& program, const std::vector<std::string>& canonical_flags,
                           const Arch& resolved, const std::vector<std::filesystem::path>& include_dirs,
                           const std::filesystem::path& source_dir, compile::FastPath fast,
                           cache::Hasher::Fields fields) {
  static const std::string nvrtc = NvrtcCompiler::version();
  cache::Hasher h(k_key_format_version, fields);
  h.field("kjit-version", KJIT_VERSION);
  h.field("nvrtc-version", nvrtc);
  h.field("target", resolved.str() + (resolved.is_real() ? " cubin+ptx" : " ptx"));
  h.field("option-count", canonical_flags.size());
  for (const auto& f : canonical_flags) h.field("option", f);
  h.field("nvrtc-fast-path", fast == compile::FastPath::on ? "on" : "off");
  // The program's name as far as the output can hold it. Its file name always (NVRTC names an
  // anonymous namespace's symbols after it: _INTERNAL_..._4_k_cu); the name as given (a path,
  // as the user spelled it) only where the output can hold that (`__FILE__`, line info, -G,
  // LTO-IR): elsewhere `kernels/k.cu`, `./k.cu` and `/abs/kernels/k.cu` are one key.
  bool name_in_output = options_hold_file_name(canonical_flags) || may_expand_file_name(program.source());
  for (const auto& [name, content] : program.headers()) name_in_output = name_in_output || may_expand_file_name(content);
  h.field("program-name", file_name(program.name()));
  h.field("source", program.source());
  h.field("header-count", program.headers().size());
  for (const auto& [name, content] : program.headers()) {
    h.field("header-name", name);
    h.field("header-content", content);
  }
  std::vector<ScannedHeader> files;
  // A source without include lines needs no scanner (and its std::filesystem paths).
  if (!IncludeScanner::include_lines(program.source()).empty()) {
    std::vector<std::string> in_memory;
    for (const auto& hdr : program.headers()) in_memory.push_back(hdr.first);
    // NVRTC searches the user include dirs, then directory(), then include_path(); the scanner
    // follows quoted includes from the including file's folder first, then these in order.
    std::vector<std::filesystem::path> dirs = include_dirs;
    dirs.insert(dirs.end(), program.include_path().begin(), program.include_path().end());
    IncludeScanner scanner(std::move(dirs), std::move(in_memory));
    files = scanner.scan(program.source(), source_dir);
  }
  h.field("include-file-count", files.size());
  for (const auto& f : files) {
    h.field("include-file", f.spelling);
    h.field("include-content", f.content);
    name_in_output = name_in_output || may_expand_file_name(f.content);
  }
  if (name_in_output) h.field("program-name-as-given", program.name());
  h.field("name-expression-count", program.name_expressions().size());
  for (const auto& e : program.name_expressions()) h.field("name-expression", e);
  return CacheKey{h.finish(), h.fields()};
}

CacheKey CacheKey::compute_link(const Link& link, const std::vector<std::string>& link_options, const Arch& resolved,
                                const std::vector<cache::Key>& program_keys, const std::string& nvjitlink_version,
                                cache::Hasher::Fields fields) {
  cache::Hasher h(k_key_format_version, fields);
  h.field("kind", "nvjitlink link");
  h.field("kjit-version", KJIT_VERSION);
  h.field("nvjitlink-version", nvjitlink_version);
  h.field("target", resolved.str() + " cubin");
  h.field("option-count", link_options.size());
  for (const auto& o : link_options) h.field("option", o);
  h.field("link-name", link.name());
  h.field("program-count", program_keys.size());
  for (std::size_t i = 0; i < program_keys.size(); ++i) {
    h.field("program-name", file_name(link.programs()[i].name()));  // its key holds the rest
    h.field("program-key", program_keys[i].hex());
  }
  h.field("input-count", link.inputs().size());
  for (const auto& in : link.inputs()) {
    h.field("input-kind", to_string(in.kind));
    h.field("input-name", in.name);
    h.field("input-content", in.bytes);
  }
  return CacheKey{h.finish(), h.fields()};
}

}  // namespace kjit::request
