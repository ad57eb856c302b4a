// kjit::cache::CurlSession: one libcurl easy handle kept alive between requests, the transport of
// the backends that speak HTTP (HttpStore, S3Store). Every request is bounded by the connect
// timeout (opening) and connect + reply (the whole transfer, however slowly it trickles). A 200's
// body longer than the request takes is refused from its Content-Length before it is read, or as
// soon as more arrives than that; a Range request keeps the value's first bytes (a 206, or a 200
// cut there). Redirects are not followed. Any status is a CurlResponse; trouble below HTTP (no
// connection, a timeout, a body cut short, a value over the bound) is a Failure naming the request
// (Reason::timed_out, Reason::too_large). How it says who it is: basic or bearer credentials, or
// libcurl's own AWS SigV4 (CURLOPT_AWS_SIGV4); the secrets never appear in a message, and are
// wiped when the session goes. curl_global_init runs once, on first use. Nothing here throws past
// allocation failures.
#pragma once

#include "core/cache/remote/remote_store.hpp"
#include "core/system/result.hpp"

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kjit::cache {

struct CurlRequest {
  std::string_view method = "GET";  // GET, PUT, HEAD or POST (an empty body)
  std::string url;
  std::string shown;                // what messages call it: "ac/<sha256>"
  std::uint64_t max_size = std::numeric_limits<std::uint64_t>::max();  // a 200's body
  std::string_view upload;          // PUT: the body
  std::string_view content_type = "application/octet-stream";  // PUT: the body's
  std::size_t prefix = 0;           // not 0: ask for the first `prefix` bytes only (Range: bytes=0-N)
  std::vector<std::string> headers;  // "Name: value", this request's own (signed with SigV4)
};

struct CurlResponse {
  long status = 0;
  std::string body;  // a 200's (or a range's) value; another status's first kilobyte, for messages
  std::vector<std::pair<std::string, std::string>> headers;  // names lowercased; the first 32, 4 KiB each
  // The header `name` (lowercase), empty when absent.
  std::string header(std::string_view name) const;
};

struct CurlAuth {
  HttpCredentials http;     // basic or bearer
  std::string sigv4;        // "aws:amz:<region>:s3": sign with `user_password` as key id:secret
  std::string user_password;
};

class CurlSession {
public:
  CurlSession(std::string shown_url, RemoteTimeouts timeouts, CurlAuth auth);
  ~CurlSession();
  CurlSession(const CurlSession&) = delete;
  CurlSession& operator=(const CurlSession&) = delete;

  system::Result<CurlResponse> perform(const CurlRequest& request);
  const std::string& url() const { return m_url; }
  const CurlAuth& auth() const { return m_auth; }
  RemoteTimeouts timeouts() const { return m_timeouts; }

private:
  system::Result<void> open();

  std::string m_url;  // the store's address as printed (no credentials)
  RemoteTimeouts m_timeouts;
  CurlAuth m_auth;
  void* m_curl = nullptr;  // CURL*
  char m_error[256] = {};  // CURL_ERROR_SIZE
};

}  // namespace kjit::cache
