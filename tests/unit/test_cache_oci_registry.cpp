// kjit::cache::OciRegistry against a real registry (Debian's docker-registry, distribution 2.8,
// on loopback): a bundle pushed by tag is an OCI artifact of kjit's artifactType, pulled by tag
// (resolved to its digest) and by digest; its faults are errors that name the reference and
// never a loaded bundle: an unknown tag (404), a manifest whose bytes do not hash to its digest,
// a blob changed in storage, a registry killed mid-push, a login refused; and a 10k-entry bundle
// made from a store goes through whole and imports into another.
#include "core/cache/bundle.hpp"
#include "core/cache/remote/oci_registry.hpp"
#include "core/cache/remote/remote_backend.hpp"
#include "core/cache/store.hpp"
#include "support/http_server.hpp"
#include "support/registry_server.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tests/unit/test_cache_support.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sodium.h>

#include <atomic>
#include <chrono>
#include <thread>

using namespace kjit;
using namespace kjit::cache;
using namespace std::chrono_literals;

namespace {

OciRegistry registry(const std::string& url, HttpCredentials credentials = {}) {
  auto ref = parse_oci_reference(url);
  REQUIRE_MESSAGE(ref, (ref ? "" : ref.error().message));
  return OciRegistry(std::move(*ref), {2s, 60s}, std::move(credentials));
}

std::string random_bytes(std::size_t n) {
  std::string s(n, '\0');
  randombytes_buf(s.data(), s.size());
  return s;
}

}  // namespace

TEST_SUITE("OciRegistry") {
  TEST_CASE("a bundle pushed by tag is a kjit artifact pulled by tag and by digest") {
    KJIT_REQUIRE_SERVER(test::registry_unavailable);
    test::TempDir tmp;
    test::RegistryServer server(tmp / "registry");
    const std::string bytes = random_bytes(300000);
    const std::string ref = fmt::format("oci://{}/team/kjit-bundles:warm-sm90", server.host());
    auto pushed = registry(ref).push(bytes);
    REQUIRE_MESSAGE(pushed, (pushed ? "" : pushed.error().message));
    CHECK(pushed->starts_with("sha256:"));
    const std::string manifest = test::read_file(server.blob_file(*pushed));
    CHECK(manifest.find("\"artifactType\":\"application/vnd.kjit.bundle.v1\"") != std::string::npos);

    auto by_tag = registry(ref).pull(1 << 30);
    REQUIRE_MESSAGE(by_tag, (by_tag ? "" : by_tag.error().message));
    CHECK(by_tag->digest == *pushed);  // the tag resolved to its digest
    CHECK(by_tag->bytes == bytes);
    auto by_digest = registry(fmt::format("oci://{}/team/kjit-bundles@{}", server.host(), *pushed)).pull(1 << 30);
    REQUIRE(by_digest);
    CHECK(by_digest->bytes == bytes);
    // A pull that takes less than the blob refuses it.
    CHECK_FALSE(registry(ref).pull(1000));

    // References: a push needs a tag; bad ones are refused naming what is wrong.
    auto no_tag = registry(fmt::format("oci://{}/team/kjit-bundles@{}", server.host(), *pushed)).push(bytes);
    REQUIRE_FALSE(no_tag);
    CHECK(no_tag.error().message.find("a push needs a tag") != std::string::npos);
    for (const char* bad : {"oci://host", "oci://host/Upper:t", "oci://host/r:bad tag", "oci://host/r@sha256:12",
                            "oci://user:pw@host/r:t", "http://host/r:t"}) {
      auto r = parse_oci_reference(bad);
      CHECK_MESSAGE(!r, bad);
      if (!r) CHECK(r.error().message.find("pw") == std::string::npos);
    }
    CHECK(parse_oci_reference("oci://registry.example:5000/a/b:t")->base == "https://registry.example:5000");
    CHECK(parse_oci_reference("oci://127.0.0.1:5000/a:t")->base == "http://127.0.0.1:5000");
    CHECK(remote_backend_of("oci://h/r:t")->place == RemotePlace::bundles);
  }

  TEST_CASE("registry faults are errors naming the reference: 404 a lying manifest a changed blob a refused login") {
    KJIT_REQUIRE_SERVER(test::registry_unavailable);
    test::TempDir tmp;
    test::RegistryServer server(tmp / "registry");
    const std::string bytes = random_bytes(50000);
    const std::string ref = fmt::format("oci://{}/kjit:v1", server.host());
    auto pushed = registry(ref).push(bytes);
    REQUIRE(pushed);

    auto absent = registry(fmt::format("oci://{}/kjit:v2", server.host())).pull(1 << 30);
    REQUIRE_FALSE(absent);
    CHECK_MESSAGE(absent.error().message.find("HTTP 404 MANIFEST_UNKNOWN") != std::string::npos, absent.error().message);
    CHECK(absent.error().message.find("kjit:v2") != std::string::npos);

    // A server whose manifest does not hash to the digest asked for.
    const std::string body = test::read_file(server.blob_file(*pushed)) + " ";
    test::ScriptedHttpServer liar(fmt::format("HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json"
                                              "\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
                                              body.size(), body),
                                  test::ScriptedHttpServer::After::close);
    const std::string liar_host = liar.url().substr(7, liar.url().rfind('/') - 7);
    auto lie = registry(fmt::format("oci://{}/kjit@{}", liar_host, *pushed)).pull(1 << 30);
    REQUIRE_FALSE(lie);
    CHECK_MESSAGE(lie.error().message.find("not the digest asked for") != std::string::npos, lie.error().message);

    // A blob changed in the registry's storage: its digest no longer matches; nothing is returned.
    auto pulled = registry(ref).pull(1 << 30);
    REQUIRE(pulled);
    auto manifest = test::read_file(server.blob_file(pulled->digest));
    const auto at = manifest.find("\"digest\":\"sha256:", manifest.find("\"layers\""));
    const std::string layer = manifest.substr(at + 10, 71);
    std::string changed = test::read_file(server.blob_file(layer));
    changed[changed.size() / 2] = static_cast<char>(changed[changed.size() / 2] ^ 1);
    test::write_file(server.blob_file(layer), changed);
    auto damaged = registry(ref).pull(1 << 30);
    REQUIRE_FALSE(damaged);
    CHECK_MESSAGE(damaged.error().message.find("changed in the registry's storage") != std::string::npos,
                  damaged.error().message);

    // A registry behind a login: refused without credentials (naming the file to give), taken with them.
    test::RegistryServer locked(tmp / "locked", test::RegistryServer::Auth::basic);
    const std::string locked_ref = fmt::format("oci://{}/kjit:v1", locked.host());
    auto refused = registry(locked_ref).push(bytes);
    REQUIRE_FALSE(refused);
    CHECK_MESSAGE(refused.error().message.find("HTTP 401") != std::string::npos, refused.error().message);
    CHECK(refused.error().message.find("KJIT_REMOTE_HTTP_AUTH_FILE") != std::string::npos);
    HttpCredentials login{HttpCredentials::Kind::basic,
                          fmt::format("{}:{}", test::RegistryServer::k_user, test::RegistryServer::k_password)};
    auto wrong = registry(locked_ref, {HttpCredentials::Kind::basic, "kjit:not-it"}).pull(1 << 30);
    REQUIRE_FALSE(wrong);
    CHECK(wrong.error().message.find("refused the credentials") != std::string::npos);
    CHECK(wrong.error().message.find("not-it") == std::string::npos);
    auto taken = registry(locked_ref, login).push(bytes);
    REQUIRE_MESSAGE(taken, (taken ? "" : taken.error().message));
    CHECK(registry(locked_ref, login).pull(1 << 30)->bytes == bytes);
  }

  TEST_CASE("a registry killed mid-push leaves no artifact or a whole one and a second push completes") {
    KJIT_REQUIRE_SERVER(test::registry_unavailable);
    test::TempDir tmp;
    test::RegistryServer server(tmp / "registry");
    const std::string bytes = random_bytes(48 << 20);
    const std::string ref = fmt::format("oci://{}/kjit:big", server.host());
    std::atomic<bool> pushing{true};
    std::thread killer([&] {
      std::this_thread::sleep_for(30ms);
      server.kill();
      pushing = false;
    });
    auto first = registry(ref).push(bytes);
    killer.join();
    if (!first) CHECK_MESSAGE(first.error().message.find(ref) != std::string::npos, first.error().message);
    server.start();
    auto after = registry(ref).pull(1 << 30);
    if (after) {
      CHECK(after->bytes == bytes);  // the push had finished: whole
    } else {
      CHECK_MESSAGE(after.error().message.find("MANIFEST_UNKNOWN") != std::string::npos, after.error().message);
    }
    auto second = registry(ref).push(bytes);
    REQUIRE_MESSAGE(second, (second ? "" : second.error().message));
    CHECK(registry(ref).pull(1 << 30)->bytes == bytes);
  }

  TEST_CASE("a 10k-entry bundle made from a store goes through the registry whole and imports into another") {
    KJIT_REQUIRE_SERVER(test::registry_unavailable);
    test::TempDir tmp;
    test::RegistryServer server(tmp / "registry");
    StoreConfig config;
    config.dir = (tmp / "ci").string();
    Store ci(config);
    for (std::uint64_t i = 0; i < 10000; ++i) {
      const Key k = test::test_key(900000 + i);
      REQUIRE(ci.put(k, test::test_entry(k, 300)).stored);
    }
    std::string bundle;
    BundleExportOptions eo;
    auto exported = export_bundle_bytes(ci, bundle, eo);
    REQUIRE_MESSAGE(exported, (exported ? "" : exported.error().message));
    const std::string ref = fmt::format("oci://{}/fleet/warm:sm90", server.host());
    const auto t0 = std::chrono::steady_clock::now();
    auto pushed = registry(ref).push(bundle);
    REQUIRE_MESSAGE(pushed, (pushed ? "" : pushed.error().message));
    const auto t1 = std::chrono::steady_clock::now();
    auto pulled = registry(fmt::format("oci://{}/fleet/warm@{}", server.host(), *pushed)).pull(1ull << 32);
    REQUIRE(pulled);
    const auto t2 = std::chrono::steady_clock::now();
    MESSAGE(fmt::format("10k entries, {} bytes: push {} ms, pull {} ms", bundle.size(),
                        std::chrono::duration_cast<std::chrono::milliseconds>(t1 - t0).count(),
                        std::chrono::duration_cast<std::chrono::milliseconds>(t2 - t1).count()));
    StoreConfig node_config;
    node_config.dir = (tmp / "node").string();
    Store node(node_config);
    BundleImportOptions io;
    auto imported = import_bundle_bytes(node, pulled->bytes, io);
    REQUIRE_MESSAGE(imported, (imported ? "" : imported.error().message));
    const Key some = test::test_key(900000 + 4242);
    CHECK(node.get(some).outcome == GetResult::Outcome::hit);
  }
}
