// kjit::Link's file inputs and the names of its input kinds.
#include <kjit/error.hpp>
#include <kjit/link.hpp>

#include "core/system/file_io.hpp"
#include "core/link/nvjitlink_linker.hpp"

#include <fmt/format.h>


#include <cstring>

namespace kjit {

std::string_view to_string(Link::InputKind kind) {
  switch (kind) {
  case Link::InputKind::cubin: return "cubin";
  case Link::InputKind::ptx: return "ptx";
  case Link::InputKind::ltoir: return "ltoir";
  case Link::InputKind::fatbin: return "fatbin";
  case Link::InputKind::object: return "object";
  case Link::InputKind::library: return "library";
  }
  return "unknown";
}

Link::InputKind link_input_kind(const std::filesystem::path& file) {
  const std::string ext = file.extension().string();
  if (ext == ".cubin") return Link::InputKind::cubin;
  if (ext == ".ptx") return Link::InputKind::ptx;
  if (ext == ".ltoir") return Link::InputKind::ltoir;
  if (ext == ".fatbin") return Link::InputKind::fatbin;
  if (ext == ".o") return Link::InputKind::object;
  if (ext == ".a") return Link::InputKind::library;
  throw UsageError(fmt::format("adding {} to a link: \"{}\" names no kind of device code; expected .cubin, .ptx, "
                               ".ltoir, .fatbin, .o (relocatable object) or .a (static library)", file.string(),
                               ext));
}

Link& Link::add_file(const std::filesystem::path& file) & {
  const InputKind kind = link_input_kind(file);
  // Prebuilt device code (a .a may be large): a regular file, no size cap.
  system::FileContent content = system::read_file(file);
  if (!content.ok()) throw IoError(fmt::format("reading {} for link {}: {}", file.string(), m_name, content.why()));
  return add_data(kind, file.string(), std::move(content.bytes));
}

std::string nvjitlink_version() { return link::NvJitLinker::version(); }

}  // namespace kjit
