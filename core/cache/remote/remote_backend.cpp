// The rows of the remote backends' registry (remote_backend.hpp): one a scheme. A backend is its
// file (a RemoteStore and its opener, declared here) and its row below.
#include "core/cache/remote/remote_backend.hpp"

#include "core/cache/remote/remote_store.hpp"

#include <array>

namespace kjit::cache {

// The openers, each defined in its backend's file.
system::Result<std::unique_ptr<RemoteStore>> open_redis_store(const std::string& url, const RemoteOpenOptions& options);
#ifdef KJIT_HAS_HTTP_STORE
system::Result<std::unique_ptr<RemoteStore>> open_http_store(const std::string& url, const RemoteOpenOptions& options);
system::Result<std::unique_ptr<RemoteStore>> open_s3_store(const std::string& url, const RemoteOpenOptions& options);
#define KJIT_WITH_CURL(opener) opener
#else
#define KJIT_WITH_CURL(opener) nullptr
#endif

namespace {

using CAS = RemoteCapabilities::CompareAndSet;
constexpr RemoteCapabilities k_redis{.locks = true, .ttl = true, .range_reads = true, .compare_and_set = CAS::atomic,
                                     .bundles = false};
constexpr RemoteCapabilities k_object_store{.locks = false, .ttl = false, .range_reads = true,
                                            .compare_and_set = CAS::check_then_write, .bundles = true};
constexpr std::string_view k_no_curl =
    "this kjit was built without the HTTP store (libcurl was not found at build time, or KJIT_HTTP_STORE=OFF)";

constexpr RemoteCapabilities k_registry{.locks = false, .ttl = false, .range_reads = false,
                                       .compare_and_set = CAS::check_then_write, .bundles = true};

const std::array<RemoteBackend, 7> k_rows{{
    {"redis", "redis://[[user]:password@]host[:port][/db]", "Redis over TCP (hiredis)", RemotePlace::shard, k_redis,
     false, open_redis_store, {}},
    {"rediss", "rediss://[[user]:password@]host[:port][/db]", "Redis over TLS", RemotePlace::shard, k_redis, false,
     nullptr,
     "this kjit's hiredis (0.14, Debian 12's) has no TLS: reach Redis over unix:// or through a TLS tunnel "
     "(stunnel) as redis://"},
    {"unix", "unix:///path/to/redis.sock[?db=N]", "Redis on a unix socket (hiredis)", RemotePlace::shard, k_redis, false,
     open_redis_store, {}},
    {"http", "http://host[:port][/prefix]", "any server that takes PUT (nginx WebDAV, bazel-remote)",
     RemotePlace::level, k_object_store, true, KJIT_WITH_CURL(open_http_store), k_no_curl},
    {"https", "https://host[:port][/prefix]", "the same over TLS", RemotePlace::level, k_object_store, true,
     KJIT_WITH_CURL(open_http_store), k_no_curl},
    {"s3", "s3://bucket[/prefix][?region=R][&endpoint=http[s]://host[:port]]",
     "S3 and S3-compatible stores (libcurl's SigV4)", RemotePlace::level, k_object_store, true,
     KJIT_WITH_CURL(open_s3_store), k_no_curl},
    // Bundles only (tools/admin: kjit cache bundle push/pull through OciRegistry): no RemoteStore.
    {"oci", "oci://host[:port]/repository[:tag][@sha256:digest]", "OCI registries (the distribution API)",
     RemotePlace::bundles, k_registry, false, nullptr,
     "an oci:// registry keeps warm bundles only (kjit cache bundle push/pull), not a fleet's values"},
}};

}  // namespace

std::span<const RemoteBackend> remote_backends() { return k_rows; }

const RemoteBackend* remote_backend_of(std::string_view url) {
  const auto end = url.find("://");
  if (end == std::string_view::npos) return nullptr;
  const std::string_view scheme = url.substr(0, end);
  for (const RemoteBackend& row : k_rows) {
    if (row.scheme == scheme) return &row;
  }
  return nullptr;
}

std::string remote_backend_forms() {
  std::string out;
  for (const RemoteBackend& row : k_rows) {
    if (row.place == RemotePlace::bundles) continue;
    if (!out.empty()) out += ", ";
    out += row.form;
  }
  return out;
}

}  // namespace kjit::cache
