// kjit::cache::RemoteStore: the storage layer of the remote tier, the one interface a backend
// implements (Redis today: redis_store.cpp; HTTP or S3 would be one more file). It moves bytes
// under string names and holds short-lived named locks; policy (what is sent, signatures,
// back-off, the write queue) lives in RemoteTier. One object serves one thread at a time; every
// call is bounded by the timeouts it was opened with and reports trouble as a Failure
// (Reason::timed_out for a timeout). No CUDA here.
#pragma once

#include "core/system/result.hpp"

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
  virtual system::Result<std::optional<std::string>> get(std::string_view name, std::uint64_t max_size) = 0;
  // Stores `value` under `name`, replacing any; expires after `ttl` unless it is zero.
  virtual system::Result<void> put(std::string_view name, std::string_view value, std::chrono::milliseconds ttl) = 0;
  // Takes the lock `name` for `token` unless someone holds it; it expires after `ttl`.
  virtual system::Result<bool> try_lock(std::string_view name, std::string_view token, std::chrono::milliseconds ttl) = 0;
  // Extends a lock `token` still holds to `ttl` from now; false when it no longer holds it.
  virtual system::Result<bool> refresh_lock(std::string_view name, std::string_view token, std::chrono::milliseconds ttl) = 0;
  // Releases a lock `token` holds (one someone else took after it expired stays).
  virtual system::Result<void> unlock(std::string_view name, std::string_view token) = 0;
  // A round trip, and what the server says of itself ("redis 7.0.15").
  virtual system::Result<std::string> ping() = 0;
  // The address as given with its password redacted (redact_url), for messages.
  virtual const std::string& url() const = 0;
};

// `url` as kjit prints it anywhere (messages, warnings, JSON): a password becomes *** (the
// "redis://:***@host:6379", "redis://user:***@host"); everything else is kept.
std::string redact_url(std::string_view url);

// A backend for `url`: redis://[:password@]host[:port][/db] or unix:///path/to/redis.sock.
// Connects lazily: a down server is a Failure of the first call, not of this one. A Failure here
// means the URL itself is wrong (what was expected).
system::Result<std::unique_ptr<RemoteStore>> open_remote_store(const std::string& url, RemoteTimeouts timeouts);

}  // namespace kjit::cache
