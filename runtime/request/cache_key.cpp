#include "runtime/request/cache_key.hpp"

#include "runtime/compile/include_scanner.hpp"
#include "runtime/compile/nvrtc_compiler.hpp"

namespace kjit::request {

using compile::IncludeScanner;
using compile::NvrtcCompiler;
using compile::ScannedHeader;

CacheKey CacheKey::compute(const Program& program, const std::vector<std::string>& canonical_flags,
                           const Arch& resolved, const std::vector<std::filesystem::path>& include_dirs,
                           const std::filesystem::path& source_dir, cache::Hasher::Fields fields) {
  static const std::string nvrtc = NvrtcCompiler::version();
  cache::Hasher h(k_key_format_version, fields);
  h.field("kjit-version", KJIT_VERSION);
  h.field("nvrtc-version", nvrtc);
  h.field("target", resolved.str() + (resolved.is_real() ? " cubin+ptx" : " ptx"));
  h.field("option-count", canonical_flags.size());
  for (const auto& f : canonical_flags) h.field("option", f);
  h.field("program-name", program.name());
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
  }
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
    h.field("program-name", link.programs()[i].name());
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
