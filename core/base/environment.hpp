// The one table of kjit's KJIT_* environment variables (k_environment: name, default, parser,
// one-line doc) and the one reader of each kind of value. Every reader in runtime/ goes through
// it (base::env_flag(Env::cache_disable), ...); README's configuration table lists exactly these
// rows with these defaults (a unit test compares them). Boolean values go through
// system::parse_flag (strict): unset, empty, 0, false, no and off are false; 1, true, yes and on
// are true, in any case. A value a parser refuses is a UsageError naming the variable and value.
// Not here: KJIT_PROFILE_OUT/_TRACE/_MAX_EVENTS/_SORT/_LIMIT/_BY_SHAPE/_PHASES/_METRICS/_KERNEL/
// _LAUNCH_COUNT/_LAUNCH_SKIP, which profile_program sets for inject/'s libkjit_inject (a private
// channel, read there with the public API only, as inject/ links nothing else).
#pragma once

#include "core/base/tools_api.hpp"

#include <kjit/log.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::base {

// How a variable's value is read.
enum class EnvParser {
  text,                  // the value as it is (a path, a URL)
  path_list,             // colon-separated folders, empty parts skipped
  flag,                  // system::parse_flag; unset: the row's default (off, or on)
  flag_or_force,         // a flag, or "force" (any case)
  size,                  // system::parse_size: 2G, 512M, 1048576
  positive_size,         // a size above 0
  duration,              // system::parse_duration: 30s, 10m, 2h, 7d, 2w
  positive_duration_ms,  // system::parse_duration_ms above 0: 50ms, 0.2s
  log_level,             // parse_log_level: error, warn, info, debug
};

// The variables, in README's order; the enum indexes k_environment.
enum class Env : std::size_t {
  cache_dir, cache_shared, cache_max_size, cache_disable, always_compile, nvrtc_fast, prepare, dump_dir, log,
  lock_timeout, lock_stale_after, remote_cache, remote_secret_file, remote_signing_key_file, remote_public_key_file,
  remote_http_auth_file, remote_readonly, remote_timeout, remote_ttl, remote_max_value,
  require_hit, kernel_path, max_source_size, hot_reload, cuda_home, cupti_library, profile_injection, tune, print_tuning,
  tune_metrics, count_
};

struct EnvVariable {
  Env id;
  std::string_view name;
  std::string_view default_text;  // as README shows it ("unset": nothing)
  EnvParser parser;
  std::string_view doc;
};

inline constexpr std::array<EnvVariable, static_cast<std::size_t>(Env::count_)> k_environment{{
    {Env::cache_dir, "KJIT_CACHE_DIR", "$XDG_CACHE_HOME/kjit, ~/.cache/kjit, <tmp>/kjit-cache-<uid>", EnvParser::text,
     "the cache folder (--cache-dir)"},
    {Env::cache_shared, "KJIT_CACHE_SHARED", "off", EnvParser::flag, "a team cache, made 2770/0660"},
    {Env::cache_max_size, "KJIT_CACHE_MAX_SIZE", "2G", EnvParser::size, "the cache's byte budget (0: none)"},
    {Env::cache_disable, "KJIT_CACHE_DISABLE", "off", EnvParser::flag, "no cache reads or writes"},
    {Env::always_compile, "KJIT_ALWAYS_COMPILE", "off", EnvParser::flag, "compile each request"},
    {Env::nvrtc_fast, "KJIT_NVRTC_FAST", "on", EnvParser::flag,
     "NVRTC's minimal front end where a program allows it (off: always the full one)"},
    {Env::prepare, "KJIT_PREPARE", "on", EnvParser::flag,
     "NVRTC made ready on a thread of its own when a Runtime is made and on `import kjit` (off: by the first compile)"},
    {Env::dump_dir, "KJIT_DUMP_DIR", "unset", EnvParser::text, "a folder per compile: source, PTX, cubin, log"},
    {Env::log, "KJIT_LOG", "warn", EnvParser::log_level, "the log level"},
    {Env::lock_timeout, "KJIT_LOCK_TIMEOUT", "5m", EnvParser::duration,
     "longest wait for another compiler of a kernel"},
    {Env::lock_stale_after, "KJIT_LOCK_STALE_AFTER", "10s", EnvParser::duration,
     "stop waiting once the compiler shows no progress this long"},
    {Env::remote_cache, "KJIT_REMOTE_CACHE", "unset", EnvParser::text,
     "the fleet cache: redis:// or unix:// shards with weights, then http(s):// and s3:// levels, comma-separated"},
    {Env::remote_secret_file, "KJIT_REMOTE_SECRET_FILE", "unset", EnvParser::text,
     "the fleet secret: values signed, only valid ones loaded"},
    {Env::remote_signing_key_file, "KJIT_REMOTE_SIGNING_KEY_FILE", "unset", EnvParser::text,
     "an ed25519 signing key (CI): values and bundles signed with it"},
    {Env::remote_public_key_file, "KJIT_REMOTE_PUBLIC_KEY_FILE", "unset", EnvParser::text,
     "ed25519 public keys: only values and bundles they sign load; the fleet cache is not written"},
    {Env::remote_http_auth_file, "KJIT_REMOTE_HTTP_AUTH_FILE", "unset", EnvParser::text,
     "the HTTP levels' credentials: user:password or Bearer <token>"},
    {Env::remote_readonly, "KJIT_REMOTE_READONLY", "off", EnvParser::flag, "never write to or lock the fleet cache"},
    {Env::remote_timeout, "KJIT_REMOTE_TIMEOUT", "50ms", EnvParser::positive_duration_ms,
     "the fleet cache's connect and reply timeout"},
    {Env::remote_ttl, "KJIT_REMOTE_TTL", "never", EnvParser::duration, "fleet values expire after this"},
    {Env::remote_max_value, "KJIT_REMOTE_MAX_VALUE", "64M", EnvParser::size, "larger entries are not sent"},
    {Env::require_hit, "KJIT_REQUIRE_HIT", "off", EnvParser::flag,
     "a miss in every cache tier is an error (CacheMissError), never a compile"},
    {Env::kernel_path, "KJIT_KERNEL_PATH", "unset", EnvParser::path_list, "folders the loader searches first"},
    {Env::max_source_size, "KJIT_MAX_SOURCE_SIZE", "64M", EnvParser::positive_size,
     "the largest source, header or manifest"},
    {Env::hot_reload, "KJIT_HOT_RELOAD", "off", EnvParser::flag, "the loader recompiles edited files"},
    {Env::cuda_home, "KJIT_CUDA_HOME", "unset", EnvParser::text, "the toolkit root, before CUDA_HOME and CUDA_PATH"},
    {Env::cupti_library, "KJIT_CUPTI_LIBRARY", "unset", EnvParser::text, "the libcupti to open"},
    {Env::profile_injection, "KJIT_PROFILE_INJECTION", "unset", EnvParser::text,
     "the libkjit_inject kjit profile injects"},
    {Env::tune, "KJIT_TUNE", "on", EnvParser::flag_or_force, "off: the first candidate; force: time again"},
    {Env::print_tuning, "KJIT_PRINT_TUNING", "off", EnvParser::flag, "tuning decisions and times to the log"},
    {Env::tune_metrics, "KJIT_TUNE_METRICS", "unset", EnvParser::text,
     "sol: a decision records its candidates' speed-of-light figures"},
}};

constexpr const EnvVariable& env_variable(Env id) { return k_environment[static_cast<std::size_t>(id)]; }

// The raw value; nullopt when unset or empty.
KJIT_TOOLS_API std::optional<std::string> env_text(Env id);
// text and path_list rows.
std::vector<std::string> env_path_list(Env id);
bool env_flag(Env id);  // unset: the row's default_text ("on" or "off")
enum class FlagOrForce { off, on, force };
FlagOrForce env_flag_or_force(Env id);  // unset or empty: on
std::optional<std::uint64_t> env_size(Env id);                    // size and positive_size rows
std::optional<std::chrono::seconds> env_duration(Env id);          // duration rows
std::optional<std::chrono::milliseconds> env_duration_ms(Env id);  // positive_duration_ms rows
std::optional<LogLevel> env_log_level(Env id);

// The same readers over a value given in code (RuntimeConfig::set): `what` says where it came
// from in the error ("setting RuntimeConfig::cache_max_size to \"lots\"").
bool flag_value(std::string_view text, std::string_view what);
std::uint64_t size_value(Env id, std::string_view text, std::string_view what);
std::chrono::seconds duration_value(Env id, std::string_view text, std::string_view what);
std::chrono::milliseconds duration_ms_value(Env id, std::string_view text, std::string_view what);
LogLevel log_level_value(std::string_view text, std::string_view what);

// KJIT_CACHE_DIR when set, else cache::default_cache_dir's places.
KJIT_TOOLS_API std::string cache_dir_from_environment();

}  // namespace kjit::base
