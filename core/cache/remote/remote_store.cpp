// open_remote_store: a RemoteStore for a URL, through the row of its scheme (remote_backend.hpp);
// and the HTTP store's credentials file, read here so that a build without libcurl still says
// what is wrong with it.
#include "core/cache/remote/remote_store.hpp"

#include "core/cache/remote/remote_backend.hpp"
#include "core/system/file_io.hpp"

#include <fmt/format.h>

#include <cstring>

namespace kjit::cache {

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

system::Result<std::unique_ptr<RemoteStore>> open_remote_store(const std::string& url,
                                                               const RemoteOpenOptions& options) {
  const RemoteBackend* row = remote_backend_of(url);
  if (row == nullptr) {
    return system::Failure{
        fmt::format("remote cache address \"{}\": unknown scheme (expected {})", redact_url(url), remote_backend_forms())};
  }
  if (row->open == nullptr) return system::Failure{fmt::format("remote cache {}: {}", redact_url(url), row->missing)};
  return row->open(url, options);
}

}  // namespace kjit::cache
