// kjit::cache::OciRegistry: warm bundles as OCI artifacts in a registry (the oci:// row of the
// backends' registry), over the OCI distribution API through a CurlSession:
//   push: the bundle as one blob (POST an upload, PUT it with its digest), the empty config blob,
//         then a manifest (application/vnd.oci.image.manifest.v1+json) whose artifactType is
//         kjit's own (k_artifact_type), under the reference's tag;
//   pull: the manifest by digest (or by tag, resolved to the digest of the bytes received), its
//         artifactType and one layer checked, the blob fetched and its SHA-256 checked against
//         the manifest's digest. The caller still checks the bundle's own signature.
// References: oci://HOST[:PORT]/REPO[:TAG][@sha256:HEX]; a loopback host speaks plain HTTP, any
// other HTTPS. Credentials: basic or bearer from a file (HttpCredentials), never the URL. Every
// Failure names the reference and what the registry said (its error code). Nothing here throws
// past allocation failures.
#pragma once

#include "core/cache/remote/remote_store.hpp"
#include "core/system/result.hpp"
#include "core/system/tools_api.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace kjit::cache {

inline constexpr std::string_view k_artifact_type = "application/vnd.kjit.bundle.v1";
inline constexpr std::string_view k_bundle_layer_type = "application/vnd.kjit.bundle.layer.v1";

struct OciReference {
  std::string text;        // as given
  std::string base;        // http[s]://HOST[:PORT]
  std::string repository;  // "team/kjit-bundles"
  std::string tag;         // empty: none
  std::string digest;      // "sha256:<64 hex>", empty: none
};
KJIT_TOOLS_API system::Result<OciReference> parse_oci_reference(std::string_view url);

class OciRegistry {
public:
  KJIT_TOOLS_API OciRegistry(OciReference reference, RemoteTimeouts timeouts, HttpCredentials credentials);
  KJIT_TOOLS_API ~OciRegistry();
  OciRegistry(const OciRegistry&) = delete;
  OciRegistry& operator=(const OciRegistry&) = delete;

  // Pushes `bytes` as the artifact's one layer and tags its manifest: the manifest's digest.
  KJIT_TOOLS_API system::Result<std::string> push(std::string_view bytes);
  struct Pulled {
    std::string bytes;   // the layer, its digest checked
    std::string digest;  // the manifest's digest
  };
  // The artifact the reference names (its digest, else its tag); a blob over `max_size` is refused.
  KJIT_TOOLS_API system::Result<Pulled> pull(std::uint64_t max_size);

private:
  struct Impl;
  Impl* m_impl;
};

}  // namespace kjit::cache
