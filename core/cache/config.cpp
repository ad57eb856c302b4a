#include "core/system/units.hpp"
#include "core/cache/config.hpp"

#include "core/system/atomic_file.hpp"
#include "core/system/file_io.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fcntl.h>
#include <cstdlib>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kjit::cache {

namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

}  // namespace

std::string default_cache_dir(std::string_view chosen) {
  // Plain strings: this runs on a fresh process's first request, where std::filesystem's first
  // use costs tens of microseconds.
  if (!chosen.empty()) return std::string(chosen);
  if (auto xdg = env("XDG_CACHE_HOME"); xdg && xdg->front() == '/') return system::join_path(*xdg, "kjit");
  if (auto home = env("HOME")) return system::join_path(*home, ".cache/kjit");
  if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_dir != nullptr && *pw->pw_dir) {
    return system::join_path(pw->pw_dir, ".cache/kjit");
  }
  return temp_fallback_cache_dir();
}

std::string temp_fallback_cache_dir() {
  std::error_code ec;
  std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
  if (ec) tmp = "/tmp";
  return (tmp / temp_fallback_name()).string();
}

std::string temp_fallback_name() { return "kjit-cache-" + std::to_string(::getuid()); }

namespace {

std::string cachedir_tag_content() {
  return fmt::format(
      "{}\n# This file is a cache directory tag created by kjit.\n"
      "# For information about cache directory tags, see:\n#\thttps://bford.info/cachedir/\n",
      k_cachedir_tag_signature);
}

}  // namespace

system::Result<void> write_cachedir_tag_at(int dir_fd, const std::string& dir, system::FileMode mode) {
  struct stat st{};
  if (::fstatat(dir_fd, std::string(k_cachedir_tag_name).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return {};
  auto file = system::AtomicFile::create_at(dir_fd, dir, std::string(k_cachedir_tag_name), mode);
  if (!file) return file.error();
  if (auto written = file->write(cachedir_tag_content()); !written) return written;
  return file->commit(system::AtomicFile::Sync::no);
}

system::Result<void> write_cachedir_tag(const std::filesystem::path& dir) {
  const std::filesystem::path tag = dir / k_cachedir_tag_name;
  struct stat st{};
  if (::stat(tag.c_str(), &st) == 0) return {};
  return system::write_file_atomically(tag, cachedir_tag_content(), system::AtomicFile::Sync::no);
}

}  // namespace kjit::cache
