// RuntimeConfig::from_environment: the KJIT_* variables a Runtime reads, through base's table.
#include <kjit/runtime_config.hpp>

#include "runtime/base/environment.hpp"

namespace kjit {

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
  if (auto dir = base::env_text(Env::dump_dir)) c.dump_dir = *dir;
  c.cache_shared = base::env_flag(Env::cache_shared);
  if (auto url = base::env_text(Env::remote_cache)) c.remote_cache = *url;
  c.remote_read_only = base::env_flag(Env::remote_readonly);
  if (auto file = base::env_text(Env::remote_secret_file)) c.remote_secret_file = *file;
  if (auto ms = base::env_duration_ms(Env::remote_timeout)) c.remote_timeout = *ms;
  if (auto d = base::env_duration(Env::remote_ttl)) c.remote_ttl = *d;
  if (auto size = base::env_size(Env::remote_max_value)) c.remote_max_value_size = *size;
  if (auto level = base::env_log_level(Env::log)) c.log_level = *level;
  // Read where a source is read (base::max_source_size), checked here: a value kjit cannot use
  // is a UsageError when a Runtime starts, not a failure of every compile after.
  (void)base::env_size(Env::max_source_size);
  return c;
}

}  // namespace kjit
