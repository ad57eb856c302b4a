// RuntimeConfig::from_environment: the KJIT_* variables a Runtime reads.
#include <kjit/error.hpp>
#include <kjit/runtime_config.hpp>

#include "cache/config.hpp"
#include "runtime/base/environment.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace kjit {
namespace {

std::chrono::seconds duration(const char* value, std::string_view name) {
  if (auto d = cache::parse_duration(value)) return *d;
  throw UsageError(fmt::format("reading {} \"{}\": expected a duration such as 30s, 10m, 2h, 7d or 2w", name, value));
}

}  // namespace

RuntimeConfig RuntimeConfig::from_environment() {
  RuntimeConfig c;
  // KJIT_CACHE_DIR is read by the compile service itself when cache_dir is empty
  // (cache::default_cache_dir), as a string: a fresh process's first request builds no path.
  if (const char* v = std::getenv("KJIT_CACHE_MAX_SIZE"); v && *v) {
    auto size = cache::parse_size(v);
    if (!size) {
      throw UsageError(fmt::format("reading KJIT_CACHE_MAX_SIZE=\"{}\": expected a size such as 2G, 512M or "
                                   "1048576", v));
    }
    c.cache_max_size = *size;
  }
  for (auto [name, field] : {std::pair{"KJIT_LOCK_TIMEOUT", &c.lock_timeout},
                              std::pair{"KJIT_LOCK_STALE_AFTER", &c.lock_stale_after}}) {
    if (const char* v = std::getenv(name); v && *v) *field = duration(v, name);
  }
  c.cache_disabled = base::env_flag("KJIT_CACHE_DISABLE");
  c.always_compile = base::env_flag("KJIT_ALWAYS_COMPILE");
  if (const char* v = std::getenv("KJIT_DUMP_DIR"); v && *v) c.dump_dir = v;
  c.cache_shared = base::env_flag("KJIT_CACHE_SHARED");
  if (const char* v = std::getenv("KJIT_REMOTE_CACHE"); v && *v) c.remote_cache = v;
  c.remote_read_only = base::env_flag("KJIT_REMOTE_READONLY");
  if (const char* v = std::getenv("KJIT_REMOTE_SECRET_FILE"); v && *v) c.remote_secret_file = v;
  if (const char* v = std::getenv("KJIT_REMOTE_TIMEOUT"); v && *v) {
    auto ms = cache::parse_duration_ms(v);
    if (!ms || ms->count() <= 0) {
      throw UsageError(fmt::format("reading KJIT_REMOTE_TIMEOUT=\"{}\": expected a positive duration such as 50ms "
                                   "or 0.2s", v));
    }
    c.remote_timeout = *ms;
  }
  if (const char* v = std::getenv("KJIT_REMOTE_TTL"); v && *v) c.remote_ttl = duration(v, "KJIT_REMOTE_TTL");
  if (const char* v = std::getenv("KJIT_REMOTE_MAX_VALUE"); v && *v) {
    auto size = cache::parse_size(v);
    if (!size) {
      throw UsageError(fmt::format("reading KJIT_REMOTE_MAX_VALUE=\"{}\": expected a size such as 64M", v));
    }
    c.remote_max_value_size = *size;
  }
  if (const char* v = std::getenv("KJIT_LOG"); v && *v) {
    auto level = parse_log_level(v);
    if (!level) throw UsageError(fmt::format("reading KJIT_LOG=\"{}\": expected error, warn, info or debug", v));
    c.log_level = *level;
  }
  return c;
}

}  // namespace kjit
