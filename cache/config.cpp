#include "cache/config.hpp"

#include "cache/atomic_file.hpp"
#include "cache/file_io.hpp"

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

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Splits "1.5GiB" into 1.5 and "gib". nullopt when there is no number or it is negative.
std::optional<std::pair<long double, std::string>> split_number(std::string_view text) {
  text = trim(text);
  std::size_t i = 0;
  bool digits = false, dot = false;
  while (i < text.size()) {
    const char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits = true;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
    ++i;
  }
  if (!digits) return std::nullopt;
  long double value = 0;
  long double scale = 0;  // 0 before the dot, then 0.1, 0.01...
  for (char c : text.substr(0, i)) {
    if (c == '.') {
      scale = 0.1L;
      continue;
    }
    if (scale == 0) {
      value = value * 10 + (c - '0');
    } else {
      value += (c - '0') * scale;
      scale /= 10;
    }
  }
  return std::pair{value, lower(trim(text.substr(i)))};
}

}  // namespace

std::string join_path(std::string base, std::string_view tail) {
  if (!base.empty() && base.back() != '/') base.push_back('/');
  base += tail;
  return base;
}

std::string default_cache_dir(std::string_view chosen) {
  // Plain strings: this runs on a fresh process's first request, where std::filesystem's first
  // use costs tens of microseconds.
  if (!chosen.empty()) return std::string(chosen);
  if (auto xdg = env("XDG_CACHE_HOME"); xdg && xdg->front() == '/') return join_path(*xdg, "kjit");
  if (auto home = env("HOME")) return join_path(*home, ".cache/kjit");
  if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_dir != nullptr && *pw->pw_dir) {
    return join_path(pw->pw_dir, ".cache/kjit");
  }
  return temp_fallback_cache_dir();
}

std::string temp_fallback_cache_dir() {
  std::error_code ec;
  std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
  if (ec) tmp = "/tmp";
  return (tmp / fmt::format("kjit-cache-{}", ::getuid())).string();
}

std::optional<bool> parse_flag(std::string_view text) {
  const std::string v = lower(trim(text));
  if (v.empty() || v == "0" || v == "false" || v == "no" || v == "off") return false;
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  return std::nullopt;
}

std::optional<std::uint64_t> parse_size(std::string_view text) {
  auto parts = split_number(text);
  if (!parts) return std::nullopt;
  auto [value, unit] = *parts;
  int power = -1;
  static constexpr std::string_view k_units = "kmgtpe";
  if (unit.empty() || unit == "b") {
    power = 0;
  } else if (auto pos = k_units.find(unit[0]); pos != std::string_view::npos) {
    const std::string_view rest = std::string_view(unit).substr(1);
    if (rest.empty() || rest == "b" || rest == "i" || rest == "ib") power = static_cast<int>(pos) + 1;
  }
  if (power < 0) return std::nullopt;
  const long double bytes = std::floor(value * std::pow(1024.0L, power));
  if (!(bytes < 18446744073709551616.0L)) return std::nullopt;
  return static_cast<std::uint64_t>(bytes);
}

std::chrono::milliseconds saturate_duration(std::chrono::milliseconds d) {
  return std::clamp(d, std::chrono::milliseconds(0), std::chrono::milliseconds(k_max_duration));
}

namespace {

// Seconds per unit (s, m, h, d, w; none: seconds), 0 for an unknown unit.
long double seconds_per(const std::string& unit) {
  if (unit.empty() || unit == "s") return 1;
  if (unit == "m" || unit == "min") return 60;
  if (unit == "h") return 3600;
  if (unit == "d") return 86400;
  if (unit == "w") return 7 * 86400;
  return 0;
}

}  // namespace

std::optional<std::chrono::seconds> parse_duration(std::string_view text) {
  auto parts = split_number(text);
  if (!parts) return std::nullopt;
  auto [value, unit] = *parts;
  const long double factor = seconds_per(unit);
  if (factor == 0) return std::nullopt;
  const long double seconds = std::floor(value * factor);
  if (!(seconds < static_cast<long double>(k_max_duration.count()))) return k_max_duration;  // also inf
  return std::chrono::seconds(static_cast<std::int64_t>(seconds));
}

std::optional<std::chrono::milliseconds> parse_duration_ms(std::string_view text) {
  auto parts = split_number(text);
  if (!parts) return std::nullopt;
  auto [value, unit] = *parts;
  long double ms_per = 1;
  if (unit != "ms") {
    ms_per = seconds_per(unit) * 1000;
    if (ms_per == 0) return std::nullopt;
  }
  const long double ms = std::floor(value * ms_per);
  constexpr std::chrono::milliseconds k_max_ms = k_max_duration;
  if (!(ms < static_cast<long double>(k_max_ms.count()))) return k_max_ms;
  return std::chrono::milliseconds(static_cast<std::int64_t>(ms));
}

namespace {

std::string cachedir_tag_content() {
  return fmt::format(
      "{}\n# This file is a cache directory tag created by kjit.\n"
      "# For information about cache directory tags, see:\n#\thttps://bford.info/cachedir/\n",
      k_cachedir_tag_signature);
}

}  // namespace

Result<void> write_cachedir_tag_at(int dir_fd, const std::string& dir, FileMode mode) {
  struct stat st{};
  if (::fstatat(dir_fd, std::string(k_cachedir_tag_name).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return {};
  auto file = AtomicFile::create_at(dir_fd, dir, std::string(k_cachedir_tag_name), mode);
  if (!file) return file.error();
  if (auto written = file->write(cachedir_tag_content()); !written) return written;
  return file->commit(AtomicFile::Sync::no);
}

Result<void> write_cachedir_tag(const std::filesystem::path& dir) {
  const std::filesystem::path tag = dir / k_cachedir_tag_name;
  struct stat st{};
  if (::stat(tag.c_str(), &st) == 0) return {};
  return write_file_atomically(tag, cachedir_tag_content(), AtomicFile::Sync::no);
}

}  // namespace kjit::cache
