#include "core/system/units.hpp"
#include "core/base/environment.hpp"

#include <kjit/error.hpp>

#include "core/cache/config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace kjit::base {
namespace {

// The row of `id`, checked against the reader's kind (a mismatch is kjit's bug).
const EnvVariable& row(Env id, std::initializer_list<EnvParser> kinds) {
  const EnvVariable& v = env_variable(id);
  if (std::find(kinds.begin(), kinds.end(), v.parser) == kinds.end()) {
    throw Error(fmt::format("internal: {} is not read as this kind of value", v.name));
  }
  return v;
}

const char* raw(const EnvVariable& v) {
  const char* value = std::getenv(std::string(v.name).c_str());
  return value != nullptr && *value != '\0' ? value : nullptr;
}

[[noreturn]] void refuse(std::string_view what, std::string_view expected) {
  throw UsageError(fmt::format("{}: expected {}", what, expected));
}

std::string reading(const EnvVariable& v, const char* value) { return fmt::format("reading {}=\"{}\"", v.name, value); }

}  // namespace

std::optional<std::string> env_text(Env id) {
  const char* v = raw(env_variable(id));
  return v ? std::optional<std::string>(v) : std::nullopt;
}

std::vector<std::string> env_path_list(Env id) {
  std::vector<std::string> out;
  const char* v = raw(row(id, {EnvParser::path_list}));
  if (v == nullptr) return out;
  std::string_view s = v;
  while (!s.empty()) {
    const auto colon = s.find(':');
    if (const auto part = s.substr(0, colon); !part.empty()) out.emplace_back(part);
    if (colon == std::string_view::npos) break;
    s.remove_prefix(colon + 1);
  }
  return out;
}

bool env_flag(Env id) {
  const EnvVariable& r = row(id, {EnvParser::flag});
  const char* v = std::getenv(std::string(r.name).c_str());
  if (v == nullptr) return r.default_text == "on";
  return flag_value(v, reading(r, v));
}

bool flag_value(std::string_view text, std::string_view what) {
  if (auto on = system::parse_flag(text)) return *on;
  refuse(what, "1, 0, true, false, yes, no, on or off");
}

FlagOrForce env_flag_or_force(Env id) {
  const EnvVariable& r = row(id, {EnvParser::flag_or_force});
  const char* v = raw(r);
  if (v == nullptr) return FlagOrForce::on;
  if (auto on = system::parse_flag(v)) return *on ? FlagOrForce::on : FlagOrForce::off;
  std::string lower(v);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "force") return FlagOrForce::force;
  refuse(reading(r, v), "on, off (or another flag value) or force");
}

namespace {

// What kjit can use of each size and duration row: a value outside is refused at start-up
// (RuntimeConfig::from_environment, which the CLI calls first), naming the variable.
struct SizeRange {
  std::uint64_t min, max;
  std::string_view expected;
};
SizeRange size_range(Env id) {
  switch (id) {
    case Env::max_source_size:
      return {1ull << 10, 4ull << 30, "a size from 1K to 4G such as 64M"};
    case Env::remote_max_value:
      return {1ull << 10, 4ull << 30, "a size from 1K to 4G such as 64M"};
    default:  // KJIT_CACHE_MAX_SIZE: any size, 0 for none
      return {0, UINT64_MAX, "a size such as 2G, 512M or 1048576"};
  }
}

// Durations longer than system::k_max_duration (100 years) saturate to it; these are the shortest.
std::chrono::milliseconds duration_min(Env id) {
  // A compiling holder shows progress every second: a shorter bound would give up on live ones.
  if (id == Env::lock_stale_after) return std::chrono::seconds(2);
  if (id == Env::remote_timeout) return std::chrono::milliseconds(1);
  return std::chrono::milliseconds(0);  // KJIT_LOCK_TIMEOUT (0: never wait), KJIT_REMOTE_TTL (0: never)
}

}  // namespace

std::optional<std::uint64_t> env_size(Env id) {
  const EnvVariable& r = row(id, {EnvParser::size, EnvParser::positive_size});
  const char* v = raw(r);
  if (v == nullptr) return std::nullopt;
  return size_value(id, v, reading(r, v));
}

std::uint64_t size_value(Env id, std::string_view text, std::string_view what) {
  const SizeRange range = size_range(id);
  auto size = system::parse_size(text);
  if (!size || *size < range.min || *size > range.max) refuse(what, range.expected);
  return *size;
}

std::optional<std::chrono::seconds> env_duration(Env id) {
  const EnvVariable& r = row(id, {EnvParser::duration});
  const char* v = raw(r);
  if (v == nullptr) return std::nullopt;
  return duration_value(id, v, reading(r, v));
}

std::chrono::seconds duration_value(Env id, std::string_view text, std::string_view what) {
  auto d = system::parse_duration(text);
  if (!d) refuse(what, "a duration such as 30s, 10m, 2h, 7d or 2w");
  if (*d < duration_min(id)) {
    refuse(what, fmt::format("a duration of at least {} s such as 30s, 10m or 2h",
                             std::chrono::duration_cast<std::chrono::seconds>(duration_min(id)).count()));
  }
  return *d;
}

std::optional<std::chrono::milliseconds> env_duration_ms(Env id) {
  const EnvVariable& r = row(id, {EnvParser::positive_duration_ms});
  const char* v = raw(r);
  if (v == nullptr) return std::nullopt;
  return duration_ms_value(id, v, reading(r, v));
}

std::chrono::milliseconds duration_ms_value(Env id, std::string_view text, std::string_view what) {
  auto ms = system::parse_duration_ms(text);
  if (!ms || *ms < duration_min(id)) refuse(what, "a positive duration such as 50ms or 0.2s");
  return *ms;
}

std::optional<LogLevel> env_log_level(Env id) {
  const EnvVariable& r = row(id, {EnvParser::log_level});
  const char* v = raw(r);
  if (v == nullptr) return std::nullopt;
  return log_level_value(v, reading(r, v));
}

LogLevel log_level_value(std::string_view text, std::string_view what) {
  auto level = parse_log_level(text);
  if (!level) refuse(what, "error, warn, info or debug");
  return *level;
}

std::string cache_dir_from_environment() {
  const char* v = raw(env_variable(Env::cache_dir));
  return cache::default_cache_dir(v != nullptr ? std::string_view(v) : std::string_view());
}

}  // namespace kjit::base
