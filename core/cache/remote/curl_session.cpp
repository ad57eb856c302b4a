#include "core/cache/remote/curl_session.hpp"

#include "core/system/blocked_signal.hpp"

#include <curl/curl.h>
#include <fmt/format.h>
#include <sodium.h>

#include <algorithm>
#include <cctype>
#include <csignal>

namespace kjit::cache {
namespace {

static_assert(CURL_ERROR_SIZE <= 256, "CurlSession::m_error holds CURL_ERROR_SIZE bytes");

// Once per process, on the first session that opens (never at load time).
system::Result<void> global_init() {
  static const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (rc != CURLE_OK) return system::Failure{fmt::format("initialising libcurl: {}", curl_easy_strerror(rc))};
  return {};
}

constexpr std::size_t k_error_page_kept = 1024;
constexpr std::size_t k_headers_kept = 32;

struct Transfer {
  CURL* curl = nullptr;
  const CurlRequest* request = nullptr;
  CurlResponse response;
  bool too_large = false;
  std::uint64_t announced = 0;  // the Content-Length a refused 200 announced (0: none given)
  std::size_t uploaded = 0;
  bool prefix_done = false;
};

std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  return s;
}

// Each header line; at the blank line that ends them, a 200 announcing more than max_size is
// refused before a byte of its body is read. A "100 Continue" or a redirect's headers start over.
std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  const std::size_t n = size * count;
  const std::string_view line(data, n);
  if (line.starts_with("HTTP/")) {
    t.response.headers.clear();
  } else if (const auto colon = line.find(':'); colon != std::string_view::npos) {
    if (t.response.headers.size() < k_headers_kept) {
      t.response.headers.emplace_back(lowered(line.substr(0, colon)),
                                      std::string(trimmed(line.substr(colon + 1)).substr(0, 4096)));
    }
  } else if (line == "\r\n" || line == "\n") {
    long status = 0;
    curl_easy_getinfo(t.curl, CURLINFO_RESPONSE_CODE, &status);
    curl_off_t length = -1;
    curl_easy_getinfo(t.curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    if (status == 200 && t.request->prefix == 0 && length >= 0 &&
        static_cast<std::uint64_t>(length) > t.request->max_size) {
      t.too_large = true;
      t.announced = static_cast<std::uint64_t>(length);
      return 0;  // aborts the transfer: the connection is closed, the body never read
    }
    if (status == 200 && t.request->prefix == 0 && length > 0) {
      t.response.body.reserve(static_cast<std::size_t>(length));
    }
  }
  return n;
}

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  const std::size_t n = size * count;
  const std::size_t prefix = t.request->prefix;
  long status = 0;
  curl_easy_getinfo(t.curl, CURLINFO_RESPONSE_CODE, &status);
  auto keep = [&](std::size_t limit) {
    const std::size_t room = limit - std::min(limit, t.response.body.size());
    t.response.body.append(data, std::min(room, n));
  };
  if (status == 206 && prefix != 0) {  // the range asked for (a few bytes)
    keep(prefix);
    return n;
  }
  if (status != 200) {  // an error page: its start for the message, the rest read and dropped
    keep(k_error_page_kept);
    return n;
  }
  if (prefix != 0) {  // a server that ignored the Range: the value's start is all that is wanted
    keep(prefix);
    if (t.response.body.size() < prefix) return n;
    t.prefix_done = true;
    return 0;  // stops the transfer
  }
  if (t.response.body.size() + n > t.request->max_size) {
    t.too_large = true;
    return 0;
  }
  t.response.body.append(data, n);
  return n;
}

std::size_t on_upload(char* buffer, std::size_t size, std::size_t count, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  const std::string_view upload = t.request->upload;
  const std::size_t n = std::min(size * count, upload.size() - t.uploaded);
  std::copy_n(upload.data() + t.uploaded, n, buffer);
  t.uploaded += n;
  return n;
}

}  // namespace

std::string CurlResponse::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return v;
  }
  return {};
}

CurlSession::CurlSession(std::string shown_url, RemoteTimeouts timeouts, CurlAuth auth)
    : m_url(std::move(shown_url)), m_timeouts(timeouts), m_auth(std::move(auth)) {}

CurlSession::~CurlSession() {
  if (m_curl != nullptr) curl_easy_cleanup(static_cast<CURL*>(m_curl));
  sodium_memzero(m_auth.http.secret.data(), m_auth.http.secret.size());
  sodium_memzero(m_auth.user_password.data(), m_auth.user_password.size());
}

system::Result<void> CurlSession::open() {
  if (m_curl != nullptr) return {};
  if (auto g = global_init(); !g) return g.error();
  CURL* c = curl_easy_init();
  if (c == nullptr) return system::Failure{fmt::format("opening a libcurl handle for remote cache {}", m_url)};
  m_curl = c;
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for name lookups
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(m_timeouts.connect.count()));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
                   static_cast<long>(std::min<std::int64_t>(m_timeouts.connect.count() + m_timeouts.reply.count(),
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
  if (!m_auth.sigv4.empty()) {
    curl_easy_setopt(c, CURLOPT_AWS_SIGV4, m_auth.sigv4.c_str());
    curl_easy_setopt(c, CURLOPT_USERPWD, m_auth.user_password.c_str());
  } else if (m_auth.http.kind == HttpCredentials::Kind::basic) {
    curl_easy_setopt(c, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
    curl_easy_setopt(c, CURLOPT_USERPWD, m_auth.http.secret.c_str());
  }
  return {};
}

system::Result<CurlResponse> CurlSession::perform(const CurlRequest& request) {
  system::BlockedSignal no_sigpipe(SIGPIPE);  // a server that closed the socket under a write (TLS)
  if (auto o = open(); !o) return o.error();
  auto* c = static_cast<CURL*>(m_curl);
  Transfer t;
  t.curl = c;
  t.request = &request;
  // This request's headers: no "Expect: 100-continue" before a PUT's body (one round trip less,
  // and no second of waiting on servers that ignore it), the bearer token, then its own. Not with
  // SigV4: libcurl 7.88 signs the empty "Expect:" it then leaves out (SignatureDoesNotMatch).
  struct Headers {
    curl_slist* list = nullptr;
    ~Headers() { curl_slist_free_all(list); }
    void add(const std::string& h) { list = curl_slist_append(list, h.c_str()); }
  } headers;
  if (m_auth.sigv4.empty()) headers.add("Expect:");
  if (request.method == "PUT") headers.add(fmt::format("Content-Type: {}", request.content_type));
  if (m_auth.http.kind == HttpCredentials::Kind::bearer) {
    std::string header = "Authorization: Bearer " + m_auth.http.secret;
    headers.add(header);
    sodium_memzero(header.data(), header.size());
  }
  for (const std::string& h : request.headers) headers.add(h);
  const std::string range = request.prefix != 0 ? fmt::format("0-{}", request.prefix - 1) : std::string();
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);  // resets UPLOAD and NOBODY from the last call
  curl_easy_setopt(c, CURLOPT_RANGE, range.empty() ? nullptr : range.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.list);
  if (request.method == "HEAD") {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else if (request.method == "POST") {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, 0L);
  } else if (request.method == "PUT") {
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(request.upload.size()));
    curl_easy_setopt(c, CURLOPT_READDATA, &t);
  }
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  m_error[0] = '\0';
  const CURLcode rc = curl_easy_perform(c);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, nullptr);  // the list goes with this call
  curl_easy_setopt(c, CURLOPT_RANGE, nullptr);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &t.response.status);
  if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && t.prefix_done)) return std::move(t.response);
  if (t.too_large) {
    const std::string size = t.announced != 0 ? fmt::format("is {} bytes", t.announced)
                                              : fmt::format("runs past {} bytes", request.max_size);
    return system::Failure{fmt::format("{} {} on remote cache {}: the value {}, over the {} bytes this process takes "
                                       "(KJIT_REMOTE_MAX_VALUE); not read",
                                       request.method, request.shown, m_url, size, request.max_size),
                           system::Failure::Reason::too_large};
  }
  system::Failure f{fmt::format("{} {} on remote cache {}: {}", request.method, request.shown, m_url,
                                m_error[0] != '\0' ? std::string(m_error) : std::string(curl_easy_strerror(rc)))};
  if (rc == CURLE_OPERATION_TIMEDOUT) {
    f.reason = system::Failure::Reason::timed_out;
    f.message += fmt::format(" (timed out: connect {} ms, whole transfer {} ms)", m_timeouts.connect.count(),
                             m_timeouts.connect.count() + m_timeouts.reply.count());
  }
  return f;
}

}  // namespace kjit::cache
