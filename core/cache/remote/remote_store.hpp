// kjit::cache::RemoteStore: the storage layer of the remote tier, the one interface a backend
// implements, each backend one file and one row of the registry (remote_backend.hpp: Redis in
// redis_store.cpp through hiredis; HTTP in http_store.cpp and S3 in s3_store.cpp through libcurl,
// curl_session.cpp). It moves bytes under string names and holds short-lived named locks where
// the backend has them (its row says so: RemoteCapabilities::locks); policy (what is sent,
// signatures, back-off, the write queue, the order of the levels, which shard holds a key) lives
// in RemoteTier. One object is one server (a shard, or a level) and serves one thread at a time;
// every call is bounded by the timeouts it was opened with and reports trouble as a Failure
// (Reason::timed_out for a timeout; Reason::refused when the server answered and refused a write:
// it still serves reads). No CUDA here.
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
  // and writes in one script (atomic); HTTP and S3 read the value's first bytes (a Range request),
  // then PUT only when none matched (a check before the write: RemoteCapabilities::compare_and_set).
  // How an unsigned writer leaves the fleet's signed values alone (RemoteTier).
  virtual system::Result<bool> put_unless_prefixed(std::string_view name, std::string_view value,
                                                   std::chrono::milliseconds ttl,
                                                   const std::vector<std::string_view>& keep) = 0;
  // The three lock calls work where the backend's row says RemoteCapabilities::locks (elsewhere
  // they fail). Takes the lock `name` for `token` unless someone holds it; it expires after `ttl`.
  virtual system::Result<bool> try_lock(std::string_view name, std::string_view token, std::chrono::milliseconds ttl) = 0;
  // Extends a lock `token` still holds to `ttl` from now; false when it no longer holds it.
  virtual system::Result<bool> refresh_lock(std::string_view name, std::string_view token, std::chrono::milliseconds ttl) = 0;
  // Releases a lock `token` holds (one someone else took after it expired stays).
  virtual system::Result<void> unlock(std::string_view name, std::string_view token) = 0;
  // A round trip, and what the server says of itself ("redis 7.0.15", "http 404 nginx/1.22.1",
  // "s3 bucket kjit: 404 NoSuchKey for the probe"); a Failure says what is wrong (an S3 bucket that
  // does not exist, credentials it refuses).
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

struct RemoteOpenOptions {
  RemoteTimeouts timeouts;
  HttpCredentials http;  // for http(s):// servers (S3 reads AWS_* and ~/.aws/credentials itself)
};

// A backend for one server `url`, chosen by the row of its scheme (remote_backend_of); a row this
// build lacks (libcurl not found) or an unknown scheme is a Failure that says so and lists the
// forms an address may take. Connects lazily: a down server is a Failure of the first call, not of
// this one. A Failure here means the URL itself (or, for S3, the credentials' source) is wrong.
KJIT_TOOLS_API system::Result<std::unique_ptr<RemoteStore>> open_remote_store(const std::string& url,
                                                                             const RemoteOpenOptions& options);

}  // namespace kjit::cache
