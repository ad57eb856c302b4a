// kjit::cache::RemoteStore: the storage layer of the remote tier, the one interface a backend
// implements, each backend one file: Redis (redis_store.cpp, hiredis) and HTTP (http_store.cpp,
// libcurl; S3 would be one more). It moves bytes under string names and holds short-lived named
// locks where the backend has them (HTTP has none); policy (what is sent, signatures, back-off,
// the write queue, the order of the levels, which shard holds a key) lives in RemoteTier. One
// object is one server (a shard, or an HTTP level) and serves one thread at a time; every call is
// bounded by the timeouts it was opened with and reports trouble as a Failure (Reason::timed_out
// for a timeout; Reason::refused when the server answered and refused a write: it still serves
// reads). No CUDA here.
#pragma once

#include "core/system/tools_api.hpp"
#include "core/system/result.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::cache {

struct RemoteTimeouts {
  std::chrono::milliseconds connect{50};
  std::chrono::milliseconds reply{50};
};

class RemoteStore {
public:
  virtual ~RemoteStore() = default;

  // The value under `name`, nullopt when there is none. One longer than `max_size` is refused
  // from the length the server announces, before it is read: a Failure with Reason::too_large.
  virtual system::Result<std::optional<std::string>> get(std::string_view name, std::uint64_t max_size) = 0;
  // Stores `value` under `name`, replacing any; expires after `ttl` unless it is zero.
  virtual system::Result<void> put(std::string_view name, std::string_view value, std::chrono::milliseconds ttl) = 0;
  // Stores `value` under `name` as put() does, unless the value there now starts with one of
  // `keep` (a few bytes each, at most 64): then it keeps that value and returns false. Redis checks
  // and writes in one script (atomic); HTTP reads the value's first bytes (a Range request), then
  // PUTs only when none matched (a check before the write). How an unsigned writer leaves the
  // fleet's signed values alone (RemoteTier).
  virtual system::Result<bool> put_unless_prefixed(std::string_view name, std::string_view value,
                                                   std::chrono::milliseconds ttl,
                                                   const std::vector<std::string_view>& keep) = 0;
  // Takes the lock `name` for `token` unless someone holds it; it expires after `ttl`.
  virtual system::Result<bool> try_lock(std::string_view name, std::string_view token, std::chrono::milliseconds ttl) = 0;
  // Extends a lock `token` still holds to `ttl` from now; false when it no longer holds it.
  virtual system::Result<bool> refresh_lock(std::string_view name, std::string_view token, std::chrono::milliseconds ttl) = 0;
  // Releases a lock `token` holds (one someone else took after it expired stays).
  virtual system::Result<void> unlock(std::string_view name, std::string_view token) = 0;
  // Whether the three calls above work here: an HTTP server has no atomic expiring lock (its
  // lock calls fail), so the tier takes the fleet lock on a level that has them, or none.
  virtual bool supports_locks() const { return true; }
  // A round trip, and what the server says of itself ("redis 7.0.15", "http 404 nginx/1.22.1").
  virtual system::Result<std::string> ping() = 0;
  // Why the server would refuse writes now, as far as it tells ("full: used_memory 1.2M of
  // maxmemory 1M, noeviction"); nullopt when it would take them or cannot tell. For ping.
  virtual std::optional<std::string> refuses_writes() { return std::nullopt; }
  // The address as given with its password redacted (redact_url), for messages.
  virtual const std::string& url() const = 0;
};

// `url` as kjit prints it anywhere (messages, warnings, JSON): a password becomes *** (the
// "redis://:***@host:6379", "redis://user:***@host"); everything else is kept. In a list
// (KJIT_REMOTE_CACHE), every entry's (cache::redact_remote_list).
KJIT_TOOLS_API std::string redact_url(std::string_view url);

// What an HTTP store sends to say who it is, from the file KJIT_REMOTE_HTTP_AUTH_FILE names
// (never from the URL, which kjit prints): "user:password" (basic) or "Bearer <token>".
struct HttpCredentials {
  enum class Kind { none, basic, bearer } kind = Kind::none;
  std::string secret;  // basic: "user:password"; bearer: the token
};
// The file's first line, trailing blanks removed; a Failure names the file and the two forms.
KJIT_TOOLS_API system::Result<HttpCredentials> read_http_credentials(const std::string& path);

// A backend for one server `url`: redis://[:password@]host[:port][/db], unix:///path/to/redis.sock, or
// http[s]://host[:port][/prefix] (with `credentials`; a build without libcurl refuses it).
// Connects lazily: a down server is a Failure of the first call, not of this one. A Failure here
// means the URL itself is wrong (what was expected).
KJIT_TOOLS_API system::Result<std::unique_ptr<RemoteStore>> open_remote_store(const std::string& url, RemoteTimeouts timeouts,
                                                       const HttpCredentials& credentials = {});
// The backends open_remote_store chooses from by scheme (redis_store.cpp, http_store.cpp).
system::Result<std::unique_ptr<RemoteStore>> open_redis_store(const std::string& url, RemoteTimeouts timeouts);
system::Result<std::unique_ptr<RemoteStore>> open_http_store(const std::string& url, RemoteTimeouts timeouts,
                                                     const HttpCredentials& credentials);
KJIT_TOOLS_API bool is_http_url(std::string_view url);  // http:// or https://

}  // namespace kjit::cache
