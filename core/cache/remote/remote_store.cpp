// open_remote_store: the one place that picks a RemoteStore backend for a URL, by its scheme; and
// the HTTP store's credentials file, read here so that a build without libcurl still says what
// is wrong with it.
#include "core/cache/remote/remote_store.hpp"

#include "core/system/file_io.hpp"

#include <fmt/format.h>

#include <cstring>

namespace kjit::cache {

bool is_http_url(std::string_view url) { return url.starts_with("http://") || url.starts_with("https://"); }

system::Result<HttpCredentials> read_http_credentials(const std::string& path) {
  system::FileContent text = system::read_file(path);
  if (!text.ok()) return system::Failure{fmt::format("reading the HTTP store's credentials {}: {}", path, text.why())};
  std::string line = std::move(text.bytes);
  line = line.substr(0, line.find('\n'));
  while (!line.empty() && std::strchr(" \t\r", line.back()) != nullptr) line.pop_back();
  HttpCredentials c;
  constexpr std::string_view bearer = "Bearer ";
  if (line.size() > bearer.size() && line.compare(0, bearer.size(), bearer) == 0) {
    c.kind = HttpCredentials::Kind::bearer;
    c.secret = line.substr(line.find_first_not_of(' ', bearer.size()));
    return c;
  }
  if (const auto colon = line.find(':'); colon != std::string::npos && colon > 0) {
    c.kind = HttpCredentials::Kind::basic;
    c.secret = std::move(line);
    return c;
  }
  // The content is a secret: the message never quotes it.
  return system::Failure{fmt::format("the HTTP store's credentials {} hold neither \"user:password\" (basic) nor "
                             "\"Bearer <token>\" on their first line",
                             path)};
}

system::Result<std::unique_ptr<RemoteStore>> open_remote_store(const std::string& url, RemoteTimeouts timeouts,
                                                       const HttpCredentials& credentials) {
  if (is_http_url(url)) {
#ifdef KJIT_HAS_HTTP_STORE
    return open_http_store(url, timeouts, credentials);
#else
    (void)credentials;
    return system::Failure{fmt::format("remote cache {}: this kjit was built without the HTTP store (libcurl was not found "
                               "at build time, or KJIT_HTTP_STORE=OFF)",
                               redact_url(url))};
#endif
  }
  if (url.starts_with("redis://") || url.starts_with("unix://")) return open_redis_store(url, timeouts);
  return system::Failure{fmt::format("remote cache address \"{}\": unknown scheme (expected redis://[[user]:password@]host"
                             "[:port][/db], unix:///path/to/redis.sock[?db=N] or http[s]://host[:port][/prefix])",
                             redact_url(url))};
}

}  // namespace kjit::cache
