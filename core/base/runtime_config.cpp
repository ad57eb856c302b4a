// RuntimeConfig::from_environment: the KJIT_* variables a Runtime reads, through base's table;
// RuntimeConfig::set and options(): the same fields by name, for bindings and tools.
#include <kjit/runtime_config.hpp>

#include <kjit/error.hpp>

#include "core/cache/remote/remote_list.hpp"
#include "core/base/environment.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

namespace kjit {
namespace {

// KJIT_REMOTE_CACHE's spelling (cache/remote_list.hpp), checked where the value is given: the
// message names the entry (its password redacted), never the whole value.
void check_remote_list(std::string_view text, std::string_view what) {
  if (auto list = cache::parse_remote_list(text); !list) throw UsageError(fmt::format("{}: {}", what, list.error().message));
}

}  // namespace

RuntimeConfig RuntimeConfig::from_environment() {
  using base::Env;
  RuntimeConfig c;
  // KJIT_CACHE_DIR is read by the compile service itself when cache_dir is empty
  // (base::cache_dir_from_environment), as a string: a fresh process's first request builds no path.
  if (auto size = base::env_size(Env::cache_max_size)) c.cache_max_size = *size;
  if (auto d = base::env_duration(Env::lock_timeout)) c.lock_timeout = *d;
  if (auto d = base::env_duration(Env::lock_stale_after)) c.lock_stale_after = *d;
  c.cache_disabled = base::env_flag(Env::cache_disable);
  c.always_compile = base::env_flag(Env::always_compile);
  c.nvrtc_fast = base::env_flag(Env::nvrtc_fast);
  c.prepare = base::env_flag(Env::prepare);
  if (auto dir = base::env_text(Env::dump_dir)) c.dump_dir = *dir;
  c.cache_shared = base::env_flag(Env::cache_shared);
  if (auto url = base::env_text(Env::remote_cache)) {
    check_remote_list(*url, "reading KJIT_REMOTE_CACHE");
    c.remote_cache = *url;
  }
  c.remote_read_only = base::env_flag(Env::remote_readonly);
  if (auto file = base::env_text(Env::remote_secret_file)) c.remote_secret_file = *file;
  if (auto file = base::env_text(Env::remote_signing_key_file)) c.remote_signing_key_file = *file;
  if (auto file = base::env_text(Env::remote_public_key_file)) c.remote_public_key_file = *file;
  if (auto file = base::env_text(Env::remote_http_auth_file)) c.remote_http_auth_file = *file;
  if (auto ms = base::env_duration_ms(Env::remote_timeout)) c.remote_timeout = *ms;
  if (auto d = base::env_duration(Env::remote_ttl)) c.remote_ttl = *d;
  if (auto size = base::env_size(Env::remote_max_value)) c.remote_max_value_size = *size;
  c.require_hit = base::env_flag(Env::require_hit);
  if (auto level = base::env_log_level(Env::log)) c.log_level = *level;
  // Read where a source is read (base::max_source_size), checked here: a value kjit cannot use
  // is a UsageError when a Runtime starts, not a failure of every compile after.
  (void)base::env_size(Env::max_source_size);
  return c;
}

namespace {

using base::Env;
using Setter = void (*)(RuntimeConfig&, std::string_view, const std::string&);

struct OptionRow {
  RuntimeConfig::Option option;
  Setter set;
};

// In the order of RuntimeConfig's fields; `log` (a callback) has no row. A row that mirrors a
// variable takes its doc from base's table (options() fills it in); the others say their own.
const OptionRow k_options[] = {
    {{"cache_dir", "KJIT_CACHE_DIR", ""},
     [](RuntimeConfig& c, std::string_view v, const std::string&) {
       c.cache_dir = std::string(v);
       if (c.cache_required == CacheRequired::never) c.cache_required = CacheRequired::when_named;
     }},
    {{"cache_required", "", "never, when_named or always: whether an unusable cache folder stops the Runtime"},
     [](RuntimeConfig& c, std::string_view v, const std::string& what) {
       if (v == "never") c.cache_required = CacheRequired::never;
       else if (v == "when_named") c.cache_required = CacheRequired::when_named;
       else if (v == "always") c.cache_required = CacheRequired::always;
       else throw UsageError(fmt::format("{}: expected never, when_named or always", what));
     }},
    {{"cache_max_size", "KJIT_CACHE_MAX_SIZE", ""},
     [](RuntimeConfig& c, std::string_view v, const std::string& what) {
       c.cache_max_size = base::size_value(Env::cache_max_size, v, what);
     }},
    {{"cache_disabled", "KJIT_CACHE_DISABLE", ""},
     [](RuntimeConfig& c, std::string_view v, const std::string& what) { c.cache_disabled = base::flag_value(v, what); }},
    {{"always_compile", "KJIT_ALWAYS_COMPILE", ""},
     [](RuntimeConfig& c, std::string_view v, const std::string& what) { c.always_compile = base::flag_value(v, what); }},
    {{"lock_timeout", "KJIT_LOCK_TIMEOUT", ""},
     [](RuntimeConfig& c, std::string_view v, const std::string& what) {
       c.lock_timeout = base::duration_value(Env::lock_timeout, v, what);
     }},
    {{"lock_stale_after", "KJIT_LOCK_STALE_AFTER", ""},
     [](RuntimeConfig& c, std::string_view v, const std::string& what) {
       c.lock_stale_after = base::duration_value(Env::lock_stale_after, v, what);
     }},
    {{"wait_progress_every", "", "how often a wait is logged"},
     [](RuntimeConfig& c, std::string_view v, const std::string& what) {
       c.wait_progress_every = base::duration_ms_value(Env::remote_timeout, v, what);  // any positive duration
     }},
    {{"dump_dir", "KJIT_DUMP_DIR", ""},
     [](RuntimeConfig& c, std::string_view v, const std::string&) { c.dump_dir = std::string(v); }},
    {{"dump_hits", "", "dump cache hits too"},
     [](RuntimeConfig& c, std::string_view v, const std::string& what) { c.dump_hits = base::flag_value(v, what); }},
    {{"precompiled_headers", "", "NVRTC precompiled headers in a folder of this Runtime's"},
     [](RuntimeConfig& c, std::string_view v, const std::string& what) {
       c.precompiled_headers = base::flag_value(v, what);
     }},
    {{"nvrtc_fast", "KJIT_NVRTC_FAST", ""},
     [](RuntimeConfig& c, std::string_view v, const std::string& what) { c.nvrtc_fast = base::flag_value(v, what); }},
    {{"prepare", "KJIT_PREPARE", ""},
     [](RuntimeConfig& c, std::string_view v, const std::string& what) { c.prepare = base::flag_value(v, what); }},
    {{"log_level", "KJIT_LOG", ""},
     [](RuntimeConfig& c, std::string_view v, const std::string& what) { c.log_level = base::log_level_value(v, what); }},
    {{"cache_shared", "KJIT_CACHE_SHARED", ""},
     [](RuntimeConfig& c, std::string_view v, const std::string& what) { c.cache_shared = base::flag_value(v, what); }},
    {{"remote_cache", "KJIT_REMOTE_CACHE", ""},
     [](RuntimeConfig& c, std::string_view v, const std::string&) {
       check_remote_list(v, "setting RuntimeConfig::remote_cache");
       c.remote_cache = std::string(v);
     }},
    {{"remote_read_only", "KJIT_REMOTE_READONLY", ""},
     [](RuntimeConfig& c, std::string_view v, const std::string& what) { c.remote_read_only = base::flag_value(v, what); }},
    {{"remote_secret_file", "KJIT_REMOTE_SECRET_FILE", ""},
     [](RuntimeConfig& c, std::string_view v, const std::string&) { c.remote_secret_file = std::string(v); }},
    {{"remote_signing_key_file", "KJIT_REMOTE_SIGNING_KEY_FILE", ""},
     [](RuntimeConfig& c, std::string_view v, const std::string&) { c.remote_signing_key_file = std::string(v); }},
    {{"remote_public_key_file", "KJIT_REMOTE_PUBLIC_KEY_FILE", ""},
     [](RuntimeConfig& c, std::string_view v, const std::string&) { c.remote_public_key_file = std::string(v); }},
    {{"remote_http_auth_file", "KJIT_REMOTE_HTTP_AUTH_FILE", ""},
     [](RuntimeConfig& c, std::string_view v, const std::string&) { c.remote_http_auth_file = std::string(v); }},
    {{"remote_timeout", "KJIT_REMOTE_TIMEOUT", ""},
     [](RuntimeConfig& c, std::string_view v, const std::string& what) {
       c.remote_timeout = base::duration_ms_value(Env::remote_timeout, v, what);
     }},
    {{"remote_ttl", "KJIT_REMOTE_TTL", ""},
     [](RuntimeConfig& c, std::string_view v, const std::string& what) {
       c.remote_ttl = base::duration_value(Env::remote_ttl, v, what);
     }},
    {{"remote_max_value_size", "KJIT_REMOTE_MAX_VALUE", ""},
     [](RuntimeConfig& c, std::string_view v, const std::string& what) {
       c.remote_max_value_size = base::size_value(Env::remote_max_value, v, what);
     }},
    {{"require_hit", "KJIT_REQUIRE_HIT", ""},
     [](RuntimeConfig& c, std::string_view v, const std::string& what) { c.require_hit = base::flag_value(v, what); }},
};

}  // namespace

std::span<const RuntimeConfig::Option> RuntimeConfig::options() {
  static const auto* table = [] {
    auto* t = new std::vector<Option>();
    for (const auto& row : k_options) {
      Option o = row.option;
      for (const auto& v : base::k_environment) {
        if (!o.variable.empty() && v.name == o.variable) o.doc = v.doc;
      }
      t->push_back(o);
    }
    return t;
  }();
  return *table;
}

void RuntimeConfig::set(std::string_view name, std::string_view value) {
  for (const auto& row : k_options) {
    if (row.option.name == name) {
      if (value.find('\0') != std::string_view::npos) {
        throw UsageError(fmt::format("setting RuntimeConfig::{}: the value holds a NUL byte", name));
      }
      return row.set(*this, value, fmt::format("setting RuntimeConfig::{} to \"{}\"", name, value));
    }
  }
  std::vector<std::string_view> known;
  for (const auto& row : k_options) known.push_back(row.option.name);
  throw UsageError(fmt::format("setting RuntimeConfig::{}: unknown option (the options: {}{})", name,
                               fmt::join(known, ", "), name == "log" ? "; log is a callback: set it directly" : ""));
}

}  // namespace kjit
