// kjit::cache::RemoteStore: the storage layer of the remote tier, the one interface a backend
// implements (Redis today: redis_store.cpp; HTTP or S3 would be one more file). It moves bytes
// under string names and holds short-lived named locks; policy (what is sent, signatures,
// back-off, the write queue, which shard holds a key) lives in RemoteTier. One object is one
// server (one shard) and serves one thread at a time; every call is bounded by the timeouts it
// was opened with and reports trouble as a Failure (Reason::timed_out for a timeout;
// Reason::refused when the server answered and refused a write: it still serves reads). No CUDA here.
#pragma once

#include "cache/result.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

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
  virtual Result<std::optional<std::string>> get(std::string_view name, std::uint64_t max_size) = 0;
  // Stores `value` under `name`, replacing any; expires after `ttl` unless it is zero.
  virtual Result<void> put(std::string_view name, std::string_view value, std::chrono::milliseconds ttl) = 0;
  // Takes the lock `name` for `token` unless someone holds it; it expires after `ttl`.
  virtual Result<bool> try_lock(std::string_view name, std::string_view token, std::chrono::milliseconds ttl) = 0;
  // Extends a lock `token` still holds to `ttl` from now; false when it no longer holds it.
  virtual Result<bool> refresh_lock(std::string_view name, std::string_view token, std::chrono::milliseconds ttl) = 0;
  // Releases a lock `token` holds (one someone else took after it expired stays).
  virtual Result<void> unlock(std::string_view name, std::string_view token) = 0;
  // A round trip, and what the server says of itself ("redis 7.0.15").
  virtual Result<std::string> ping() = 0;
  // Why the server would refuse writes now, as far as it tells ("full: used_memory 1.2M of
  // maxmemory 1M, noeviction"); nullopt when it would take them or cannot tell. For ping.
  virtual std::optional<std::string> refuses_writes() { return std::nullopt; }
  // The address as given with its password redacted (redact_url), for messages.
  virtual const std::string& url() const = 0;
};

// `url` as kjit prints it anywhere (messages, warnings, JSON): a password becomes *** (the
// "redis://:***@host:6379", "redis://user:***@host"); everything else is kept. In a list
// (KJIT_REMOTE_CACHE's shards), every entry's (cache::redact_remote_list).
std::string redact_url(std::string_view url);

// A backend for one server `url`: redis://[:password@]host[:port][/db] or unix:///path/to/redis.sock.
// Connects lazily: a down server is a Failure of the first call, not of this one. A Failure here
// means the URL itself is wrong (what was expected).
Result<std::unique_ptr<RemoteStore>> open_remote_store(const std::string& url, RemoteTimeouts timeouts);

}  // namespace kjit::cache
