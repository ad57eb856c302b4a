// The S3 backend of RemoteStore (the s3:// row of remote_backend.cpp), over a CurlSession signed
// with libcurl's own SigV4 (CURLOPT_AWS_SIGV4; no AWS SDK):
//     s3://bucket[/prefix][?region=R][&endpoint=http[s]://host[:port]]
// A value lies under the object <prefix>/ac/<SHA-256 of its name>, the HTTP store's layout (a
// bucket served over plain HTTP reads as an http:// level). Without an endpoint the address is
// AWS's own (https://<bucket>.s3.<region>.amazonaws.com, path-style when the bucket holds a dot);
// with one, path-style at that endpoint (MinIO, Ceph's RGW, s3rver). The region is ?region=, else
// AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1; the credentials are S3Credentials'
// (environment or ~/.aws/credentials, never the URL). Each request carries x-amz-content-sha256
// (the body's SHA-256, signed) and, with temporary credentials, x-amz-security-token.
// Only a 200 is a value and only a 404 NoSuchKey an absent one; S3's error codes become messages
// naming what is wrong: the bucket (NoSuchBucket), the region (AuthorizationHeaderMalformed, a
// redirect, x-amz-bucket-region), the credentials (InvalidAccessKeyId, SignatureDoesNotMatch,
// ExpiredToken), the prefix (AccessDenied), the endpoint (no connection). No locks, no expiry (a
// bucket's lifecycle rules keep its size); put_unless_prefixed is a Range read then the PUT.
#include "core/cache/remote/curl_session.hpp"
#include "core/cache/remote/remote_store.hpp"
#include "core/cache/remote/s3_credentials.hpp"

#include <fmt/format.h>
#include <sodium.h>

#include <algorithm>
#include <cctype>

namespace kjit::cache {
namespace {

std::string hex(const unsigned char* bytes, std::size_t n) {
  std::string out;
  out.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) out += fmt::format("{:02x}", bytes[i]);
  return out;
}

std::string sha256_hex(std::string_view bytes) {
  static const int initialized = sodium_init();  // thread-safe, once
  (void)initialized;
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(digest, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  return hex(digest, sizeof digest);
}

constexpr std::string_view k_form = "s3://bucket[/prefix][?region=R][&endpoint=http[s]://host[:port]]";

system::Failure bad_s3_url(std::string_view url, std::string_view why) {
  return system::Failure{fmt::format("remote cache address \"{}\": {} (expected {})", redact_url(url), why, k_form)};
}

struct S3Address {
  std::string bucket, prefix, region, endpoint;  // endpoint empty: AWS's own
  std::string region_source;                     // "?region=", "AWS_REGION", ...
};

// The text between '<tag>' and '</tag>' in an S3 error document, empty when absent.
std::string xml_field(std::string_view xml, std::string_view tag) {
  const std::string open = fmt::format("<{}>", tag), close = fmt::format("</{}>", tag);
  const auto a = xml.find(open);
  if (a == std::string_view::npos) return {};
  const auto b = xml.find(close, a + open.size());
  if (b == std::string_view::npos) return {};
  std::string out(xml.substr(a + open.size(), std::min<std::size_t>(b - a - open.size(), 300)));
  for (char& c : out) c = std::isprint(static_cast<unsigned char>(c)) ? c : ' ';
  return out;
}

system::Result<S3Address> parse_s3_url(std::string_view url, const EnvironmentLookup& environment) {
  if (!url.starts_with("s3://")) return bad_s3_url(url, "unknown scheme");
  std::string_view rest = url.substr(5);
  std::string_view query;
  if (const auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  if (rest.find('@') != std::string_view::npos || rest.find('#') != std::string_view::npos) {
    return bad_s3_url(url, "an '@' or '#' (credentials never go in the URL, which kjit prints: they come from "
                           "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE)");
  }
  S3Address a;
  const auto slash = rest.find('/');
  a.bucket = std::string(rest.substr(0, slash));
  std::string_view prefix = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  const bool bucket_ok = a.bucket.size() >= 3 && a.bucket.size() <= 63 &&
                         std::all_of(a.bucket.begin(), a.bucket.end(), [](char c) {
                           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
                         }) &&
                         std::isalnum(static_cast<unsigned char>(a.bucket.front())) &&
                         std::isalnum(static_cast<unsigned char>(a.bucket.back()));
  if (!bucket_ok) {
    return bad_s3_url(url, fmt::format("the bucket \"{}\" is no S3 bucket name (3 to 63 lowercase letters, digits, "
                                       "'.' or '-', starting and ending with a letter or digit)",
                                       a.bucket));
  }
  const bool prefix_ok = std::all_of(prefix.begin(), prefix.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '.' || c == '_' || c == '-';
  });
  if (!prefix_ok || prefix.starts_with('/') || prefix.find("//") != std::string_view::npos) {
    return bad_s3_url(url, fmt::format("the prefix \"{}\" may hold letters, digits, '.', '_', '-' and single '/' "
                                       "between its parts",
                                       prefix));
  }
  a.prefix = std::string(prefix);
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const auto eq = item.find('=');
    const std::string_view key = item.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1);
    if (key == "region" && !value.empty()) {
      a.region = std::string(value);
      a.region_source = "?region=";
    } else if (key == "endpoint" && !value.empty()) {
      a.endpoint = std::string(value);
    } else {
      return bad_s3_url(url, fmt::format("\"{}\" is not region=R or endpoint=URL", item));
    }
  }
  if (a.region.empty()) {
    for (const char* name : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
      if (auto r = environment(name)) {
        a.region = *r;
        a.region_source = name;
        break;
      }
    }
  }
  if (a.region.empty()) {
    a.region = "us-east-1";
    a.region_source = "the default";
  }
  if (!std::all_of(a.region.begin(), a.region.end(),
                   [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-'; })) {
    return bad_s3_url(url, fmt::format("the region \"{}\" (from {}) is no region name (us-east-1)", a.region,
                                       a.region_source));
  }
  if (!a.endpoint.empty()) {
    std::string_view e = a.endpoint;
    const bool scheme = e.starts_with("http://") || e.starts_with("https://");
    const std::string_view host = scheme ? e.substr(e.find("://") + 3) : std::string_view();
    if (!scheme || host.empty() || host.find_first_of("/?#@") != std::string_view::npos) {
      return bad_s3_url(url, fmt::format("the endpoint \"{}\" is not http[s]://host[:port]", a.endpoint));
    }
  }
  return a;
}

class S3Store final : public RemoteStore {
public:
  S3Store(std::string url, S3Address address, RemoteTimeouts timeouts, S3Credentials credentials)
      : m_url(std::move(url)),
        m_address(std::move(address)),
        m_token(credentials.session_token),
        m_source(credentials.source),
        m_session(m_url, timeouts,
                  CurlAuth{{},
                           fmt::format("aws:amz:{}:s3", m_address.region),
                           credentials.access_key_id + ":" + credentials.secret_access_key}) {
    if (!m_address.endpoint.empty()) {
      m_root = fmt::format("{}/{}", m_address.endpoint, m_address.bucket);
    } else if (m_address.bucket.find('.') != std::string::npos) {  // a dot breaks the TLS name of a virtual host
      m_root = fmt::format("https://s3.{}.amazonaws.com/{}", m_address.region, m_address.bucket);
    } else {
      m_root = fmt::format("https://{}.s3.{}.amazonaws.com", m_address.bucket, m_address.region);
    }
  }
  ~S3Store() override { sodium_memzero(m_token.data(), m_token.size()); }

  system::Result<std::optional<std::string>> get(std::string_view name, std::uint64_t max_size) override {
    CurlRequest q = request("GET", name, {});
    q.max_size = max_size;
    auto r = perform(q);
    if (!r) return r.error();
    if (r->status == 200) return std::optional<std::string>{std::move(r->body)};
    if (absent(*r)) return std::optional<std::string>{};
    return failure(q, *r);
  }

  system::Result<void> put(std::string_view name, std::string_view value, std::chrono::milliseconds) override {
    CurlRequest q = request("PUT", name, value);
    q.upload = value;
    auto r = perform(q);
    if (!r) return r.error();
    if (r->status == 200 || r->status == 201 || r->status == 204) return {};
    // A 4xx or a 507: the server answered and refused this write (AccessDenied for credentials
    // that may only read, EntityTooLarge); it still serves reads. Other statuses: its trouble.
    system::Failure f = failure(q, *r);
    if ((r->status >= 400 && r->status < 500 && xml_field(r->body, "Code") != "NoSuchBucket") || r->status == 507) {
      f.reason = system::Failure::Reason::refused;
    }
    return f;
  }

  system::Result<bool> put_unless_prefixed(std::string_view name, std::string_view value, std::chrono::milliseconds ttl,
                                           const std::vector<std::string_view>& keep) override {
    CurlRequest q = request("GET", name, {});
    q.prefix = 64;
    auto r = perform(q);
    if (!r) return r.error();
    if (r->status == 200 || r->status == 206) {
      for (std::string_view k : keep) {
        if (!k.empty() && std::string_view(r->body).starts_with(k)) return false;
      }
    } else if (!absent(*r) && r->status != 416) {  // 416: an empty value
      return failure(q, *r);
    }
    if (auto w = put(name, value, ttl); !w) return w.error();
    return true;
  }

  system::Result<bool> try_lock(std::string_view, std::string_view, std::chrono::milliseconds) override { return no_locks(); }
  system::Result<bool> refresh_lock(std::string_view, std::string_view, std::chrono::milliseconds) override {
    return no_locks();
  }
  system::Result<void> unlock(std::string_view, std::string_view) override { return no_locks(); }

  // A signed GET of a probe object: its 404 NoSuchKey (or the object) says the bucket is there
  // and takes these credentials; anything else is what is wrong.
  system::Result<std::string> ping() override {
    CurlRequest q = request("GET", "kjit:ping", {});
    q.max_size = 4096;
    auto r = perform(q);
    if (!r) return r.error();
    if (r->status != 200 && !absent(*r)) return failure(q, *r);
    const std::string server = r->header("server").substr(0, 80);
    return fmt::format("s3 {} {} in {}{}{}", r->status, r->status == 200 ? "probe" : "NoSuchKey", m_address.region,
                       server.empty() ? "" : " ", server);
  }

  const std::string& url() const override { return m_url; }

private:
  CurlRequest request(std::string_view method, std::string_view name, std::string_view body) const {
    CurlRequest q;
    q.method = method;
    q.shown = fmt::format("{}{}ac/{}", m_address.prefix, m_address.prefix.empty() ? "" : "/", sha256_hex(name));
    q.url = m_root + "/" + q.shown;
    q.headers.push_back("x-amz-content-sha256: " + sha256_hex(body));
    if (!m_token.empty()) q.headers.push_back("x-amz-security-token: " + m_token);
    return q;
  }

  system::Result<CurlResponse> perform(const CurlRequest& q) {
    auto r = m_session.perform(q);
    if (!r && r.error().reason != system::Failure::Reason::too_large) {
      system::Failure f = r.error();
      f.message += fmt::format(" (the endpoint {})", endpoint());
      return f;
    }
    return r;
  }

  // A 404 without a document (HEAD), or with S3's NoSuchKey: no value under the name.
  static bool absent(const CurlResponse& r) {
    if (r.status != 404) return false;
    const std::string code = xml_field(r.body, "Code");
    return code.empty() || code == "NoSuchKey";
  }

  std::string endpoint() const { return m_address.endpoint.empty() ? m_root : m_address.endpoint; }

  system::Failure no_locks() const {
    return system::Failure{fmt::format("remote cache {}: an S3 store has no expiring locks", m_url)};
  }

  // What the server's answer says is wrong, in the user's terms.
  system::Failure failure(const CurlRequest& q, const CurlResponse& r) const {
    const std::string code = xml_field(r.body, "Code");
    std::string why;
    std::string region = xml_field(r.body, "Region");
    if (region.empty()) region = r.header("x-amz-bucket-region");
    if (code == "NoSuchBucket") {
      why = fmt::format("the bucket \"{}\" does not exist at {} (NoSuchBucket)", m_address.bucket, endpoint());
    } else if (code == "InvalidAccessKeyId") {
      why = fmt::format("the server knows no such access key id, from {} (InvalidAccessKeyId: wrong credentials, or "
                        "another account's or endpoint's)",
                        m_source);
    } else if (code == "SignatureDoesNotMatch") {
      why = fmt::format("the secret access key from {} does not match its key id (SignatureDoesNotMatch)", m_source);
    } else if (code == "ExpiredToken" || code == "InvalidToken" || code == "TokenRefreshRequired") {
      why = fmt::format("the session token from {} is no longer valid ({})", m_source, code);
    } else if (code == "RequestTimeTooSkewed") {
      why = "this machine's clock is more than 15 minutes off the server's (RequestTimeTooSkewed)";
    } else if (!region.empty() && region != m_address.region) {
      why = fmt::format("the wrong region: signed for {} (from {}), and the bucket \"{}\" is in {} (set ?region={}; "
                        "{})",
                        m_address.region, m_address.region_source, m_address.bucket, region, region,
                        code.empty() ? fmt::format("HTTP {}", r.status) : code);
    } else if (code == "AuthorizationHeaderMalformed" || code == "PermanentRedirect" ||
               code == "IllegalLocationConstraintException" || (r.status >= 300 && r.status < 400)) {
      why = fmt::format("the wrong region or endpoint: signed for {} (from {}) at {} ({}{})", m_address.region,
                        m_address.region_source, endpoint(), code.empty() ? fmt::format("HTTP {}", r.status) : code,
                        xml_field(r.body, "Endpoint").empty() ? ""
                                                               : "; the server names " + xml_field(r.body, "Endpoint"));
    } else if (code == "AccessDenied" || r.status == 403) {
      why = fmt::format("access denied to s3://{}/{} for the credentials from {} (the policy must allow GetObject and "
                        "PutObject under the prefix; {})",
                        m_address.bucket, m_address.prefix, m_source, code.empty() ? "HTTP 403" : code);
    } else {
      why = fmt::format("HTTP {}", r.status);
      if (!code.empty()) why += " " + code;
      if (const std::string m = xml_field(r.body, "Message"); !m.empty()) why += ": " + m;
    }
    return system::Failure{fmt::format("{} {} on remote cache {}: {}", q.method, q.shown, m_url, why)};
  }

  std::string m_url;  // as given: it holds no credentials
  S3Address m_address;
  std::string m_token;   // AWS_SESSION_TOKEN's, or none
  std::string m_source;  // where the credentials came from
  std::string m_root;    // the bucket's address: <endpoint>/<bucket> or AWS's
  CurlSession m_session;
};

}  // namespace

system::Result<std::unique_ptr<RemoteStore>> open_s3_store(const std::string& url, const RemoteOpenOptions& options) {
  auto address = parse_s3_url(url, process_environment);
  if (!address) return address.error();
  if (options.timeouts.connect.count() <= 0 || options.timeouts.reply.count() <= 0) {
    return system::Failure{fmt::format("remote cache {}: timeouts must be positive", url)};
  }
  auto credentials = read_s3_credentials();
  if (!credentials) return system::Failure{fmt::format("remote cache {}: {}", url, credentials.error().message)};
  return std::unique_ptr<RemoteStore>(
      std::make_unique<S3Store>(url, std::move(*address), options.timeouts, std::move(*credentials)));
}

}  // namespace kjit::cache
