// The HTTP backend of RemoteStore, through libcurl's easy interface: GET, PUT and HEAD of a value
// under <base>/ac/<SHA-256 of its name, 64 lowercase hex digits>, a layout any server that takes
// PUT serves (nginx with WebDAV, bazel-remote's action cache with --disable_http_ac_validation;
// docs/http-store.md). One easy handle per store object (the tier keeps one for the request path
// and one for its worker), so its connection is kept alive between calls. Every call is bounded by
// the connect timeout (opening) and connect + reply timeout (the whole transfer, however slowly it
// trickles). Only a 200 is a value and only a 404 an absent one: any other status (401, 403, 500,
// a redirect), a cut connection or a short body is a Failure, never a value. A value longer than
// the caller takes is refused from its Content-Length before its body is read, or as soon as more
// arrives than that (no length given). HTTP has no atomic expiring lock: the lock calls fail and
// supports_locks() says so. Credentials come from HttpCredentials (a file), never from the URL,
// which is refused when it holds any (kjit prints URLs). curl_global_init runs once, on first use.
#include "core/cache/remote/remote_store.hpp"

#include "core/system/blocked_signal.hpp"

#include <curl/curl.h>
#include <fmt/format.h>
#include <sodium.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <limits>
#include <mutex>

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

// Once per process, on the first HTTP store (never at load time).
system::Result<void> global_init() {
  static const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (rc != CURLE_OK) return system::Failure{fmt::format("initialising libcurl: {}", curl_easy_strerror(rc))};
  return {};
}

// What one transfer received: the status, the Server header, and the body (a value for a 200;
// the start of an error page otherwise, kept only for the message).
struct Response {
  long status = 0;
  std::string server;
  std::string body;
};

struct Transfer {
  CURL* curl = nullptr;
  std::uint64_t max_size = std::numeric_limits<std::uint64_t>::max();  // for a 200's body
  Response response;
  bool too_large = false;
  std::uint64_t announced = 0;  // the Content-Length a refused 200 announced (0: none given)
  std::string_view upload;
  std::size_t uploaded = 0;
  const char* range = nullptr;  // "0-63": only the value's first bytes (a 206, or a 200 cut there)
  std::size_t prefix = 0;       // with range: keep this many bytes of a 200's body, then stop
  bool prefix_done = false;
};

constexpr std::size_t k_error_page_kept = 200;

// Each header line; at the blank line that ends them, a 200 announcing more than max_size is
// refused before a byte of its body is read.
std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  const std::size_t n = size * count;
  std::string_view line(data, n);
  if (line.size() > 7 && std::equal(line.begin(), line.begin() + 7, "server:", [](char a, char b) {
        return std::tolower(static_cast<unsigned char>(a)) == b;
      })) {
    line.remove_prefix(7);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    while (!line.empty() && (line.back() == '\r' || line.back() == '\n' || line.back() == ' ')) line.remove_suffix(1);
    t.response.server = std::string(line.substr(0, 80));
  } else if (line == "\r\n" || line == "\n") {
    long status = 0;
    curl_easy_getinfo(t.curl, CURLINFO_RESPONSE_CODE, &status);
    curl_off_t length = -1;
    curl_easy_getinfo(t.curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    if (status == 200 && length >= 0 && static_cast<std::uint64_t>(length) > t.max_size) {
      t.too_large = true;
      t.announced = static_cast<std::uint64_t>(length);
      return 0;  // aborts the transfer: the connection is closed, the body never read
    }
    if (status == 200 && length > 0) t.response.body.reserve(static_cast<std::size_t>(length));
  }
  return n;
}

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  const std::size_t n = size * count;
  long status = 0;
  curl_easy_getinfo(t.curl, CURLINFO_RESPONSE_CODE, &status);
  if (status == 206 && t.range != nullptr) {  // the range asked for (a few bytes)
    const std::size_t room = t.prefix - std::min(t.prefix, t.response.body.size());
    t.response.body.append(data, std::min(room, n));
    return n;
  }
  if (status != 200) {  // an error page: its start for the message, the rest read and dropped
    const std::size_t room = k_error_page_kept - std::min(k_error_page_kept, t.response.body.size());
    t.response.body.append(data, std::min(room, n));
    return n;
  }
  if (t.prefix != 0) {  // a server that ignored the Range: the value's start is all that is wanted
    const std::size_t room = t.prefix - std::min(t.prefix, t.response.body.size());
    t.response.body.append(data, std::min(room, n));
    if (t.response.body.size() < t.prefix) return n;
    t.prefix_done = true;
    return 0;  // stops the transfer
  }
  if (t.response.body.size() + n > t.max_size) {
    t.too_large = true;
    return 0;
  }
  t.response.body.append(data, n);
  return n;
}

std::size_t on_upload(char* buffer, std::size_t size, std::size_t count, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  const std::size_t n = std::min(size * count, t.upload.size() - t.uploaded);
  std::copy_n(t.upload.data() + t.uploaded, n, buffer);
  t.uploaded += n;
  return n;
}

class HttpStore final : public RemoteStore {
public:
  HttpStore(std::string base, RemoteTimeouts timeouts, HttpCredentials credentials)
      : m_base(std::move(base)), m_url(m_base), m_timeouts(timeouts), m_credentials(std::move(credentials)) {}
  ~HttpStore() override {
    if (m_curl != nullptr) curl_easy_cleanup(m_curl);
    if (m_headers != nullptr) curl_slist_free_all(m_headers);
    sodium_memzero(m_credentials.secret.data(), m_credentials.secret.size());
  }

  system::Result<std::optional<std::string>> get(std::string_view name, std::uint64_t max_size) override {
    Transfer t;
    t.max_size = max_size;
    if (auto r = perform("GET", name, t); !r) return r.error();
    if (t.response.status == 404) return std::optional<std::string>{};
    if (t.response.status != 200) return status_failure("GET", name, t.response);
    return std::optional<std::string>{std::move(t.response.body)};
  }

  // The server keeps the value until it is replaced or removed: HTTP has no expiry (`ttl` is the
  // server's business: bazel-remote's size bound, a cron job over nginx's folder).
  system::Result<void> put(std::string_view name, std::string_view value, std::chrono::milliseconds) override {
    Transfer t;
    t.upload = value;
    if (auto r = perform("PUT", name, t); !r) return r.error();
    if (t.response.status == 200 || t.response.status == 201 || t.response.status == 204) return {};
    // A 4xx (413 over its body limit, 405 read-only, 403 credentials that may only read) or 507
    // (full): the server answered and refused this write; it is up and serves reads, and the tier
    // stops its writes after a few of these in a row (RemoteTier), whatever its reads do in
    // between. Any other status (500, 503) is trouble of the server's, as for a read.
    system::Failure f = status_failure("PUT", name, t.response);
    const long status = t.response.status;
    if ((status >= 400 && status < 500) || status == 507) f.reason = system::Failure::Reason::refused;
    return f;
  }

  // The value's first 64 bytes (Range: bytes=0-63; a server that ignores it is cut off there),
  // then the PUT when none of `keep` starts them. Not atomic: HTTP has no conditional write that
  // nginx's WebDAV and bazel-remote both take; another writer between the two calls wins.
  system::Result<bool> put_unless_prefixed(std::string_view name, std::string_view value, std::chrono::milliseconds ttl,
                                           const std::vector<std::string_view>& keep) override {
    Transfer t;
    t.range = "0-63";
    t.prefix = 64;
    if (auto r = perform("GET", name, t); !r) return r.error();
    if (t.response.status == 200 || t.response.status == 206) {
      for (std::string_view k : keep) {
        if (!k.empty() && std::string_view(t.response.body).starts_with(k)) return false;
      }
    } else if (t.response.status != 404 && t.response.status != 416) {  // 416: an empty value
      return status_failure("GET", name, t.response);
    }
    if (auto r = put(name, value, ttl); !r) return r.error();
    return true;
  }

  system::Result<bool> try_lock(std::string_view, std::string_view, std::chrono::milliseconds) override { return no_locks(); }
  system::Result<bool> refresh_lock(std::string_view, std::string_view, std::chrono::milliseconds) override {
    return no_locks();
  }
  system::Result<void> unlock(std::string_view, std::string_view) override { return no_locks(); }
  bool supports_locks() const override { return false; }

  // HEAD of a probe name: 200 or 404 says the server answers and takes these credentials.
  system::Result<std::string> ping() override {
    Transfer t;
    if (auto r = perform("HEAD", "kjit:ping", t); !r) return r.error();
    if (t.response.status != 200 && t.response.status != 404) return status_failure("HEAD", "kjit:ping", t.response);
    return fmt::format("http {}{}{}", t.response.status, t.response.server.empty() ? "" : " ", t.response.server);
  }

  const std::string& url() const override { return m_url; }

private:
  system::Failure no_locks() const {
    return system::Failure{fmt::format("remote cache {}: an HTTP store has no expiring locks", m_url)};
  }

  system::Failure status_failure(std::string_view method, std::string_view name, const Response& r) const {
    std::string why = fmt::format("HTTP {}", r.status);
    if (r.status == 401 || r.status == 403) {
      why += m_credentials.kind == HttpCredentials::Kind::none
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
    return system::Failure{fmt::format("{} {} on remote cache {}: {}", method, path_of(name), m_url, why)};
  }

  system::Result<void> open() {
    if (m_curl != nullptr) return {};
    if (auto g = global_init(); !g) return g.error();
    m_curl = curl_easy_init();
    if (m_curl == nullptr) return system::Failure{fmt::format("opening a libcurl handle for remote cache {}", m_url)};
    CURL* c = m_curl;
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for name lookups
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(m_timeouts.connect.count()));
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(std::min<std::int64_t>(
                                                m_timeouts.connect.count() + m_timeouts.reply.count(),
                                                std::numeric_limits<long>::max())));
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, m_error);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(c, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "kjit");
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, on_upload);
    // No "Expect: 100-continue" before a PUT's body: one round trip less, and no second of waiting
    // on servers that ignore it.
    m_headers = curl_slist_append(m_headers, "Expect:");
    m_headers = curl_slist_append(m_headers, "Content-Type: application/octet-stream");
    switch (m_credentials.kind) {
    case HttpCredentials::Kind::none: break;
    case HttpCredentials::Kind::basic:
      curl_easy_setopt(c, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
      curl_easy_setopt(c, CURLOPT_USERPWD, m_credentials.secret.c_str());
      break;
    case HttpCredentials::Kind::bearer: {
      std::string header = "Authorization: Bearer " + m_credentials.secret;
      m_headers = curl_slist_append(m_headers, header.c_str());
      sodium_memzero(header.data(), header.size());
      break;
    }
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, m_headers);
    return {};
  }

  // One request on the kept handle; trouble below HTTP (no connection, a timeout, a body cut
  // short, a value over the bound) is a Failure, any status a Response.
  system::Result<void> perform(std::string_view method, std::string_view name, Transfer& t) {
    system::BlockedSignal no_sigpipe(SIGPIPE);  // a server that closed the socket under a write (TLS)
    if (auto o = open(); !o) return o.error();
    CURL* c = m_curl;
    t.curl = c;
    const std::string path = path_of(name);
    const std::string url = m_base + "/" + path;
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);  // resets UPLOAD and NOBODY from the last call
    curl_easy_setopt(c, CURLOPT_RANGE, t.range);  // null: none (and none left from the last call)
    if (method == "HEAD") {
      curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (method == "PUT") {
      curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(t.upload.size()));
      curl_easy_setopt(c, CURLOPT_READDATA, &t);
    }
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
    m_error[0] = '\0';
    const CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &t.response.status);
    if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && t.prefix_done)) return {};
    if (t.too_large) {
      const std::string size = t.announced != 0 ? fmt::format("is {} bytes", t.announced)
                                                : fmt::format("runs past {} bytes", t.max_size);
      return system::Failure{fmt::format("{} {} on remote cache {}: the value {}, over the {} bytes this process takes "
                                 "(KJIT_REMOTE_MAX_VALUE); not read",
                                 method, path, m_url, size, t.max_size),
                     system::Failure::Reason::too_large};
    }
    system::Failure f{fmt::format("{} {} on remote cache {}: {}", method, path, m_url,
                          m_error[0] != '\0' ? std::string(m_error) : std::string(curl_easy_strerror(rc)))};
    if (rc == CURLE_OPERATION_TIMEDOUT) {
      f.reason = system::Failure::Reason::timed_out;
      f.message += fmt::format(" (timed out: connect {} ms, whole transfer {} ms)", m_timeouts.connect.count(),
                               m_timeouts.connect.count() + m_timeouts.reply.count());
    }
    return f;
  }

  std::string m_base;  // http[s]://host[:port][/prefix], no trailing slash
  std::string m_url;   // as printed: the base (it holds no credentials)
  RemoteTimeouts m_timeouts;
  HttpCredentials m_credentials;
  CURL* m_curl = nullptr;
  curl_slist* m_headers = nullptr;
  char m_error[CURL_ERROR_SIZE] = {};
};

}  // namespace

system::Result<std::unique_ptr<RemoteStore>> open_http_store(const std::string& url, RemoteTimeouts timeouts,
                                                     const HttpCredentials& credentials) {
  if (!is_http_url(url)) return bad_http_url(url, "unknown scheme");
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
  return std::unique_ptr<RemoteStore>(std::make_unique<HttpStore>(std::move(base), timeouts, credentials));
}

}  // namespace kjit::cache
