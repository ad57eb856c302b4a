#include "core/cache/remote/oci_registry.hpp"

#include "core/cache/remote/curl_session.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sodium.h>

#include <algorithm>
#include <cctype>

namespace kjit::cache {
namespace {

constexpr std::string_view k_manifest_type = "application/vnd.oci.image.manifest.v1+json";
constexpr std::string_view k_empty_type = "application/vnd.oci.empty.v1+json";
constexpr std::string_view k_empty = "{}";
constexpr std::uint64_t k_max_manifest = 1 << 20;

std::string sha256_digest(std::string_view bytes) {
  static const int initialized = sodium_init();  // thread-safe, once
  (void)initialized;
  unsigned char d[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(d, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  std::string out = "sha256:";
  for (unsigned char b : d) out += fmt::format("{:02x}", b);
  return out;
}

bool is_digest(std::string_view d) {
  return d.size() == 71 && d.starts_with("sha256:") &&
         std::all_of(d.begin() + 7, d.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

system::Failure bad_reference(std::string_view url, std::string_view why) {
  return system::Failure{fmt::format("bundle reference \"{}\": {} (expected oci://HOST[:PORT]/REPO:TAG or "
                                     "oci://HOST[:PORT]/REPO@sha256:<64 hex>)",
                                     redact_url(url), why)};
}

// What a registry's error document says: "MANIFEST_UNKNOWN: manifest unknown".
std::string registry_errors(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  std::string out;
  if (j.is_object() && j.contains("errors") && j["errors"].is_array()) {
    for (const auto& e : j["errors"]) {
      if (!e.is_object()) continue;
      out += fmt::format("{}{}: {}", out.empty() ? "" : "; ", e.value("code", std::string("?")),
                         e.value("message", std::string()));
    }
  }
  return out;
}

}  // namespace

system::Result<OciReference> parse_oci_reference(std::string_view url) {
  if (!url.starts_with("oci://")) return bad_reference(url, "not an oci:// reference");
  OciReference r;
  r.text = std::string(url);
  std::string_view rest = url.substr(6);
  if (rest.find('@') != std::string_view::npos && rest.find('@') < rest.find('/')) {
    return bad_reference(url, "credentials in the reference would show wherever it is printed; put them in the file "
                              "KJIT_REMOTE_HTTP_AUTH_FILE names");
  }
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0) return bad_reference(url, "no HOST/REPO");
  const std::string host(rest.substr(0, slash));
  rest.remove_prefix(slash + 1);
  if (const auto at = rest.find('@'); at != std::string_view::npos) {
    r.digest = std::string(rest.substr(at + 1));
    rest = rest.substr(0, at);
    if (!is_digest(r.digest)) return bad_reference(url, fmt::format("\"{}\" is no sha256:<64 hex> digest", r.digest));
  }
  if (const auto colon = rest.rfind(':'); colon != std::string_view::npos) {
    r.tag = std::string(rest.substr(colon + 1));
    rest = rest.substr(0, colon);
    const bool tag_ok = !r.tag.empty() && r.tag.size() <= 128 &&
                        (std::isalnum(static_cast<unsigned char>(r.tag[0])) || r.tag[0] == '_') &&
                        std::all_of(r.tag.begin(), r.tag.end(), [](char c) {
                          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
                        });
    if (!tag_ok) return bad_reference(url, fmt::format("\"{}\" is no tag (letters, digits, '_', '.', '-')", r.tag));
  }
  r.repository = std::string(rest);
  const bool repo_ok = !r.repository.empty() && r.repository.front() != '/' && r.repository.back() != '/' &&
                       std::all_of(r.repository.begin(), r.repository.end(), [](char c) {
                         return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '/' || c == '.' || c == '_' ||
                                c == '-';
                       });
  if (!repo_ok) {
    return bad_reference(url, fmt::format("\"{}\" is no repository (lowercase letters, digits, '.', '_', '-' and '/')",
                                          r.repository));
  }
  const std::string name = host.substr(0, host.rfind(':') == std::string::npos || host.back() == ']'
                                              ? host.size()
                                              : host.rfind(':'));
  const bool loopback = name == "localhost" || name == "[::1]" || name.starts_with("127.");
  r.base = fmt::format("{}://{}", loopback ? "http" : "https", host);
  return r;
}

struct OciRegistry::Impl {
  OciReference ref;
  CurlSession session;

  Impl(OciReference r, RemoteTimeouts timeouts, HttpCredentials credentials)
      : ref(std::move(r)), session(ref.text, timeouts, CurlAuth{std::move(credentials), {}, {}}) {}

  std::string url(std::string_view path) const { return fmt::format("{}/v2/{}/{}", ref.base, ref.repository, path); }

  system::Failure failure(std::string_view what, const CurlResponse& r) const {
    std::string why = fmt::format("HTTP {}", r.status);
    if (const std::string e = registry_errors(r.body); !e.empty()) why += " " + e;
    if (r.status == 401 || r.status == 403) {
      why += session.auth().http.kind == HttpCredentials::Kind::none
                 ? " (the registry asks for credentials: name a file holding user:password or Bearer <token> in "
                   "KJIT_REMOTE_HTTP_AUTH_FILE)"
                 : " (the registry refused the credentials of KJIT_REMOTE_HTTP_AUTH_FILE)";
    }
    return system::Failure{fmt::format("{} of {}: {}", what, ref.text, why)};
  }

  system::Result<CurlResponse> perform(CurlRequest q) {
    q.shown = q.url.substr(ref.base.size());
    return session.perform(q);
  }

  // One blob, unless the registry has it already (HEAD).
  system::Result<void> upload(std::string_view bytes, const std::string& digest) {
    CurlRequest head;
    head.method = "HEAD";
    head.url = url("blobs/" + digest);
    auto h = perform(head);
    if (!h) return h.error();
    if (h->status == 200) return {};
    CurlRequest start;
    start.method = "POST";
    start.url = url("blobs/uploads/");
    auto s = perform(start);
    if (!s) return s.error();
    if (s->status != 202) return failure("starting a blob upload", *s);
    std::string location = s->header("location");
    if (location.empty()) return system::Failure{fmt::format("starting a blob upload of {}: no Location", ref.text)};
    if (location.starts_with("/")) location = ref.base + location;
    CurlRequest put;
    put.method = "PUT";
    put.url = fmt::format("{}{}digest={}", location, location.find('?') == std::string::npos ? "?" : "&", digest);
    put.upload = bytes;
    auto p = perform(put);
    if (!p) return p.error();
    if (p->status != 201) return failure(fmt::format("uploading blob {}", digest), *p);
    return {};
  }
};

OciRegistry::OciRegistry(OciReference reference, RemoteTimeouts timeouts, HttpCredentials credentials)
    : m_impl(new Impl(std::move(reference), timeouts, std::move(credentials))) {}

OciRegistry::~OciRegistry() { delete m_impl; }

system::Result<std::string> OciRegistry::push(std::string_view bytes) {
  Impl& x = *m_impl;
  if (x.ref.tag.empty()) return bad_reference(x.ref.text, "a push needs a tag (oci://HOST/REPO:TAG)");
  const std::string layer = sha256_digest(bytes), empty = sha256_digest(k_empty);
  if (auto u = x.upload(bytes, layer); !u) return u.error();
  if (auto u = x.upload(k_empty, empty); !u) return u.error();
  const std::string manifest = nlohmann::json{
      {"schemaVersion", 2},
      {"mediaType", k_manifest_type},
      {"artifactType", k_artifact_type},
      {"config", {{"mediaType", k_empty_type}, {"digest", empty}, {"size", k_empty.size()}}},
      {"layers",
       nlohmann::json::array({{{"mediaType", k_bundle_layer_type},
                               {"digest", layer},
                               {"size", bytes.size()},
                               {"annotations", {{"org.opencontainers.image.title", "bundle.kjb"}}}}})},
  }.dump();
  CurlRequest put;
  put.method = "PUT";
  put.url = x.url("manifests/" + x.ref.tag);
  put.upload = manifest;
  put.content_type = k_manifest_type;
  auto p = x.perform(put);
  if (!p) return p.error();
  if (p->status != 201) return x.failure("putting the manifest", *p);
  const std::string digest = sha256_digest(manifest);
  if (const std::string said = p->header("docker-content-digest"); !said.empty() && said != digest) {
    return system::Failure{fmt::format("putting the manifest of {}: the registry says its digest is {}, and the bytes "
                                       "sent hash to {}",
                                       x.ref.text, said, digest)};
  }
  return digest;
}

system::Result<OciRegistry::Pulled> OciRegistry::pull(std::uint64_t max_size) {
  Impl& x = *m_impl;
  const std::string ref = !x.ref.digest.empty() ? x.ref.digest : x.ref.tag;
  if (ref.empty()) return bad_reference(x.ref.text, "a pull needs a tag or a digest");
  CurlRequest get;
  get.url = x.url("manifests/" + ref);
  get.max_size = k_max_manifest;
  get.headers.push_back(fmt::format("Accept: {}", k_manifest_type));
  auto m = x.perform(get);
  if (!m) return m.error();
  if (m->status != 200) return x.failure("getting the manifest", *m);
  Pulled out;
  out.digest = sha256_digest(m->body);
  if (!x.ref.digest.empty() && out.digest != x.ref.digest) {
    return system::Failure{fmt::format("the manifest of {} hashes to {}, not the digest asked for: not used",
                                       x.ref.text, out.digest)};
  }
  if (const std::string said = m->header("docker-content-digest"); !said.empty() && said != out.digest) {
    return system::Failure{fmt::format("the manifest of {} hashes to {}, and the registry says {}: not used",
                                       x.ref.text, out.digest, said)};
  }
  auto j = nlohmann::json::parse(m->body, nullptr, false);
  if (!j.is_object() || j.value("artifactType", std::string()) != k_artifact_type || !j.contains("layers") ||
      !j["layers"].is_array() || j["layers"].size() != 1 || !j["layers"][0].is_object()) {
    return system::Failure{fmt::format("{} ({}) is no kjit bundle: its manifest has no artifactType {} with one layer",
                                       x.ref.text, out.digest, k_artifact_type)};
  }
  const auto& l = j["layers"][0];
  const std::string layer = l.value("digest", std::string());
  if (!is_digest(layer)) {
    return system::Failure{fmt::format("{} ({}): its layer's digest \"{}\" is no sha256 digest", x.ref.text,
                                       out.digest, layer)};
  }
  CurlRequest blob;
  blob.url = x.url("blobs/" + layer);
  blob.max_size = max_size;
  auto b = x.perform(blob);
  if (!b) return b.error();
  if (b->status != 200) return x.failure(fmt::format("getting blob {}", layer), *b);
  if (const std::string got = sha256_digest(b->body); got != layer) {
    return system::Failure{fmt::format("blob {} of {} hashes to {}: changed in the registry's storage, or in transit; "
                                       "not used",
                                       layer, x.ref.text, got)};
  }
  out.bytes = std::move(b->body);
  return out;
}

}  // namespace kjit::cache
