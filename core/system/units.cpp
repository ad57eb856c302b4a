// How sizes, durations and flags are spelled on the command line and in the environment.
#include "core/system/units.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

namespace kjit::system {

namespace {

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

}  // namespace kjit::system
