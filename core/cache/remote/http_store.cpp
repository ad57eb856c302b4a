// The HTTP backend of RemoteStore (the http:// and https:// rows of remote_backend.cpp): GET, PUT
// and HEAD of a value under <base>/ac/<SHA-256 of its name, 64 lowercase hex digits>, a layout any
// server that takes PUT serves (nginx with WebDAV, bazel-remote's action cache with
// --disable_http_ac_validation; docs/http-store.md), over one CurlSession per store object (the
// tier keeps one for the request path and one for its worker), so its connection is kept alive
// between calls, each bounded by its timeouts. Only a 200 is a value and only a 404 an absent one:
// any other status (401, 403, 500, a redirect), a cut connection or a short body is a Failure,
// never a value. HTTP has no atomic expiring lock: the lock calls fail (its row has no locks).
// Credentials come from HttpCredentials (a file), never from the URL, which is refused when it
// holds any (kjit prints URLs).
#include "core/cache/remote/curl_session.hpp"
#include "core/cache/remote/remote_store.hpp"

#include <fmt/format.h>
#include <sodium.h>

#include <algorithm>
#include <cctype>

namespace kjit::cache {
namespace {

// "kjit:<key>" -> "ac/<sha256 hex>": bazel-remote's action-cache path (a 64-digit lowercase hex key).
std::string path_of(std::string_view name) {
  static const int initialized = sodium_init();  // thread-safe, once
  (void)initialized;
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(digest, reinterpret_cast<const unsigned char*>(name.data()), name.size());
  std::string out = "ac/";
  for (unsigned char b : digest) out += fmt::format("{:02x}", b);
  return out;
}

system::Failure bad_http_url(const std::string& url, std::string_view why) {
  return system::Failure{fmt::format("remote cache address \"{}\": {} (expected http[s]://host[:port][/prefix])",
                             redact_url(url), why)};
}

class HttpStore final : public RemoteStore {
public:
  HttpStore(std::string base, RemoteTimeouts timeouts, HttpCredentials credentials)
      : m_base(std::move(base)), m_session(m_base, timeouts, CurlAuth{std::move(credentials), {}, {}}) {}

  system::Result<std::optional<std::string>> get(std::string_view name, std::uint64_t max_size) override {
    CurlRequest q = request("GET", name);
    q.max_size = max_size;
    auto r = m_session.perform(q);
    if (!r) return r.error();
    if (r->status == 404) return std::optional<std::string>{};
    if (r->status != 200) return status_failure(q, *r);
    return std::optional<std::string>{std::move(r->body)};
  }

  // The server keeps the value until it is replaced or removed: HTTP has no expiry (`ttl` is the
  // server's business: bazel-remote's size bound, a cron job over nginx's folder).
  system::Result<void> put(std::string_view name, std::string_view value, std::chrono::milliseconds) override {
    CurlRequest q = request("PUT", name);
    q.upload = value;
    auto r = m_session.perform(q);
    if (!r) return r.error();
    if (r->status == 200 || r->status == 201 || r->status == 204) return {};
    // A 4xx (413 over its body limit, 405 read-only, 403 credentials that may only read) or 507
    // (full): the server answered and refused this write; it is up and serves reads, and the tier
    // stops its writes after a few of these in a row (RemoteTier), whatever its reads do in
    // between. Any other status (500, 503) is trouble of the server's, as for a read.
    system::Failure f = status_failure(q, *r);
    if ((r->status >= 400 && r->status < 500) || r->status == 507) f.reason = system::Failure::Reason::refused;
    return f;
  }

  // The value's first 64 bytes (Range: bytes=0-63; a server that ignores it is cut off there),
  // then the PUT when none of `keep` starts them. Not atomic: HTTP has no conditional write that
  // nginx's WebDAV and bazel-remote both take; another writer between the two calls wins.
  system::Result<bool> put_unless_prefixed(std::string_view name, std::string_view value, std::chrono::milliseconds ttl,
                                           const std::vector<std::string_view>& keep) override {
    CurlRequest q = request("GET", name);
    q.prefix = 64;
    auto r = m_session.perform(q);
    if (!r) return r.error();
    if (r->status == 200 || r->status == 206) {
      for (std::string_view k : keep) {
        if (!k.empty() && std::string_view(r->body).starts_with(k)) return false;
      }
    } else if (r->status != 404 && r->status != 416) {  // 416: an empty value
      return status_failure(q, *r);
    }
    if (auto w = put(name, value, ttl); !w) return w.error();
    return true;
  }

  system::Result<bool> try_lock(std::string_view, std::string_view, std::chrono::milliseconds) override { return no_locks(); }
  system::Result<bool> refresh_lock(std::string_view, std::string_view, std::chrono::milliseconds) override {
    return no_locks();
  }
  system::Result<void> unlock(std::string_view, std::string_view) override { return no_locks(); }

  // HEAD of a probe name: 200 or 404 says the server answers and takes these credentials.
  system::Result<std::string> ping() override {
    CurlRequest q = request("HEAD", "kjit:ping");
    auto r = m_session.perform(q);
    if (!r) return r.error();
    if (r->status != 200 && r->status != 404) return status_failure(q, *r);
    const std::string server = r->header("server").substr(0, 80);
    return fmt::format("http {}{}{}", r->status, server.empty() ? "" : " ", server);
  }

  const std::string& url() const override { return m_base; }

private:
  CurlRequest request(std::string_view method, std::string_view name) {
    CurlRequest q;
    q.method = method;
    q.shown = path_of(name);
    q.url = m_base + "/" + q.shown;
    return q;
  }

  system::Failure no_locks() const {
    return system::Failure{fmt::format("remote cache {}: an HTTP store has no expiring locks", m_base)};
  }

  system::Failure status_failure(const CurlRequest& q, const CurlResponse& r) const {
    std::string why = fmt::format("HTTP {}", r.status);
    if (r.status == 401 || r.status == 403) {
      why += m_session.auth().http.kind == HttpCredentials::Kind::none
                 ? " (the server asks for credentials: name a file holding user:password or Bearer <token> in "
                   "KJIT_REMOTE_HTTP_AUTH_FILE)"
                 : " (the server refused the credentials of KJIT_REMOTE_HTTP_AUTH_FILE)";
    } else if (r.status >= 300 && r.status < 400) {
      why += " (a redirect: kjit does not follow them; give the final address)";
    }
    std::string page;
    for (char c : r.body) page += std::isprint(static_cast<unsigned char>(c)) ? c : ' ';
    if (auto first = page.find_first_not_of(' '); first != std::string::npos && r.status != 401 && r.status != 403) {
      why += fmt::format(": {}", page.substr(first, 120));
    }
    return system::Failure{fmt::format("{} {} on remote cache {}: {}", q.method, q.shown, m_base, why)};
  }

  std::string m_base;  // http[s]://host[:port][/prefix], no trailing slash: the address as printed
  CurlSession m_session;
};

}  // namespace

system::Result<std::unique_ptr<RemoteStore>> open_http_store(const std::string& url, const RemoteOpenOptions& options) {
  if (!url.starts_with("http://") && !url.starts_with("https://")) return bad_http_url(url, "unknown scheme");
  const RemoteTimeouts timeouts = options.timeouts;
  std::string base = url;
  const std::size_t authority = base.find("://") + 3;
  const std::size_t path = std::min(base.find('/', authority), base.size());
  if (base.find('@', authority) < path) {
    return bad_http_url(url, "credentials in the URL would show wherever it is printed; put them in the file "
                        "KJIT_REMOTE_HTTP_AUTH_FILE names");
  }
  if (path == authority) return bad_http_url(url, "no host");
  if (base.find_first_of("?#", authority) != std::string::npos) return bad_http_url(url, "a query or fragment");
  while (base.size() > path && base.back() == '/') base.pop_back();
  if (timeouts.connect.count() <= 0 || timeouts.reply.count() <= 0) {
    return system::Failure{fmt::format("remote cache {}: timeouts must be positive", base)};
  }
  return std::unique_ptr<RemoteStore>(std::make_unique<HttpStore>(std::move(base), timeouts, options.http));
}

}  // namespace kjit::cache
