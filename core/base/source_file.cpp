#include "core/base/source_file.hpp"

#include <kjit/error.hpp>

#include "core/base/environment.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace kjit::base {

std::uint64_t max_source_size() {
  return env_size(Env::max_source_size).value_or(k_default_max_source_size);
}

system::FileContent read_source_file(const std::filesystem::path& path) {
  system::FileContent f = system::read_file(path, max_source_size());
  if (f.error == EFBIG) f.detail += " (KJIT_MAX_SOURCE_SIZE)";
  return f;
}

std::string read_text_file(const std::filesystem::path& path, std::string_view what) {
  system::FileContent f = read_source_file(path);
  if (!f.ok()) throw IoError(fmt::format("reading {} {}: {}", what, path.string(), f.why()));
  check_no_nul(f.bytes, what, path.string());
  return std::move(f.bytes);
}

void check_no_nul(std::string_view text, std::string_view what, std::string_view name) {
  const auto* nul = static_cast<const char*>(std::memchr(text.data(), '\0', text.size()));
  if (nul == nullptr) return;
  throw UsageError(fmt::format("{} {} has a NUL byte at offset {} (of {} bytes); NVRTC would compile only what "
                               "comes before it, so kjit refuses it", what, name, nul - text.data(), text.size()));
}

}  // namespace kjit::base
