// bench_oci_bundle: a warm bundle of N entries (10,000 by default) pushed to and pulled from a real
// OCI registry on loopback (Debian's docker-registry, started as the tests start it:
// tests/support/registry_server.cpp, a fresh one with empty storage for every push), against its
// floor measured in the same run, alternating:
//   - push: OciRegistry::push (the bundle as one blob: POST an upload, PUT it with its SHA-256;
//     the empty config blob; the manifest with kjit's artifactType, under a tag) against a bare
//     libcurl upload of the same bytes as one blob (SHA-256, POST, PUT with the digest);
//   - pull: OciRegistry::pull by digest (manifest, its artifactType and layer checked, the blob
//     fetched and its SHA-256 checked) against a bare libcurl GET of the blob with its SHA-256;
//   - end to end, the kjit CLI (when built): `kjit cache bundle push` (export the cache's N entries
//     as a signed bundle, push) and `kjit cache bundle pull` into an empty cache (pull, check the
//     digests and the ed25519 signature, import every entry), in fresh processes; absolute times,
//     with the library's push/pull beside them.
// No GPU, no CUDA. The entries are synthetic: a random cubin of --entry-bytes (8 KiB by default, a
// small kernel's), a short PTX and meta.
//   bench_oci_bundle [--entries N] [--entry-bytes B] [--runs R]
#include "core/cache/bundle.hpp"
#include "core/cache/remote/oci_registry.hpp"
#include "core/cache/remote/signer.hpp"
#include "core/cache/store.hpp"
#include "support/registry_server.hpp"
#include "support/temp_dir.hpp"
#include "tests/unit/test_cache_support.hpp"

#include "bench_util.hpp"

#include <curl/curl.h>
#include <fmt/format.h>
#include <sodium.h>

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

using namespace kjit;
using namespace kjit::cache;
using kjit::bench_util::median;
using kjit::bench_util::now_us;
namespace fs = std::filesystem;

namespace {

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  std::string line(data, size * count);
  if (line.size() > 9 && strncasecmp(line.c_str(), "location:", 9) == 0) {
    std::string v = line.substr(9);
    while (!v.empty() && (v.front() == ' ')) v.erase(0, 1);
    while (!v.empty() && (v.back() == '\r' || v.back() == '\n')) v.pop_back();
    *static_cast<std::string*>(user) = v;
  }
  return size * count;
}

std::string sha256_hex(std::string_view bytes) {
  unsigned char d[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(d, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  std::string out;
  for (unsigned char b : d) out += fmt::format("{:02x}", b);
  return out;
}

long perform(CURL* curl, const char* what) {
  if (CURLcode rc = curl_easy_perform(curl); rc != CURLE_OK) {
    std::fprintf(stderr, "bench_oci_bundle: floor %s: %s\n", what, curl_easy_strerror(rc));
    std::exit(1);
  }
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  return status;
}

// The floor's push: the bytes as one blob, as the distribution API's monolithic upload asks
// (POST /v2/REPO/blobs/uploads/, then PUT <location>&digest=sha256:...). Returns the digest.
std::string raw_push(const std::string& host, const std::string& bytes) {
  const std::string digest = "sha256:" + sha256_hex(bytes);
  CURL* curl = curl_easy_init();
  std::string body, location;
  curl_easy_setopt(curl, CURLOPT_URL, fmt::format("http://{}/v2/floor/blob/blobs/uploads/", host).c_str());
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, 0L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, "");
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &location);
  if (perform(curl, "POST") != 202 || location.empty()) {
    std::fprintf(stderr, "bench_oci_bundle: floor POST: no upload location\n");
    std::exit(1);
  }
  if (location.rfind("http", 0) != 0) location = fmt::format("http://{}{}", host, location);
  const std::string put = location + (location.find('?') == std::string::npos ? "?" : "&") + "digest=" + digest;
  curl_easy_reset(curl);
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/octet-stream");
  curl_easy_setopt(curl, CURLOPT_URL, put.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "PUT");
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, bytes.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(bytes.size()));
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  if (long s = perform(curl, "PUT"); s != 201) {
    std::fprintf(stderr, "bench_oci_bundle: floor PUT: HTTP %ld %s\n", s, body.c_str());
    std::exit(1);
  }
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return digest;
}

// The floor's pull: GET the blob, check its SHA-256.
std::size_t raw_pull(const std::string& host, const std::string& digest) {
  CURL* curl = curl_easy_init();
  std::string body;
  curl_easy_setopt(curl, CURLOPT_URL, fmt::format("http://{}/v2/floor/blob/blobs/{}", host, digest).c_str());
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  if (perform(curl, "GET") != 200 || "sha256:" + sha256_hex(body) != digest) {
    std::fprintf(stderr, "bench_oci_bundle: floor GET: wrong status or digest\n");
    std::exit(1);
  }
  curl_easy_cleanup(curl);
  return body.size();
}

OciRegistry registry(const std::string& url) {
  auto ref = parse_oci_reference(url);
  if (!ref) {
    std::fprintf(stderr, "bench_oci_bundle: %s\n", ref.error().message.c_str());
    std::exit(1);
  }
  return OciRegistry(std::move(*ref), {std::chrono::seconds(2), std::chrono::seconds(120)}, {});
}

// `command`'s stdout; exits on failure.
std::string run(const std::string& command) {
  std::string out;
  FILE* p = ::popen(command.c_str(), "r");
  char buf[4096];
  std::size_t n;
  while (p && (n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (!p || ::pclose(p) != 0) {
    std::fprintf(stderr, "bench_oci_bundle: failed: %s\n%s\n", command.c_str(), out.c_str());
    std::exit(1);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t entries = 10000, entry_bytes = 8192;
  int runs = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--entries") entries = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--entry-bytes") entry_bytes = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--runs") runs = std::atoi(argv[i + 1]);
  }
  if (const std::string why = test::registry_unavailable(); !why.empty()) {
    std::fprintf(stderr, "bench_oci_bundle: %s\n", why.c_str());
    return 1;
  }
  if (sodium_init() < 0) return 1;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  test::TempDir tmp;

  // The CI's cache: N entries, and their signed bundle (as `kjit cache bundle push` makes it).
  StoreConfig config;
  config.dir = (tmp / "ci").string();
  config.max_size = 0;
  Store ci(config);
  for (std::uint64_t i = 0; i < entries; ++i) {
    const Key k = test::test_key(700000 + i);
    if (!ci.put(k, test::test_entry(k, entry_bytes)).stored) {
      std::fprintf(stderr, "bench_oci_bundle: could not store entry %llu\n", static_cast<unsigned long long>(i));
      return 1;
    }
  }
  const Signer::KeyPair pair = Signer::generate_ed25519();
  test::write_file(tmp / "signing.key", pair.secret_text);
  ::chmod((tmp / "signing.key").c_str(), 0600);
  test::write_file(tmp / "public.key", pair.public_text);
  std::string seed;
  {
    const std::string hex = pair.secret_text.substr(pair.secret_text.find(':') + 1, 64);
    for (std::size_t i = 0; i < 64; i += 2) seed.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  const Signer signer = Signer::ed25519(seed, {});
  std::string bundle;
  BundleExportOptions eo;
  eo.sign = [&signer](std::string_view m) { return BundleSignature{BundleScheme::ed25519, signer.sign(m)}; };
  if (auto r = export_bundle_bytes(ci, bundle, eo); !r) {
    std::fprintf(stderr, "bench_oci_bundle: export: %s\n", r.error().message.c_str());
    return 1;
  }
  std::printf("bench_oci_bundle: %zu entries of %zu B cubins, a signed bundle of %.1f MB; docker-registry %s; "
              "medians of %d runs, each push into a fresh registry\n",
              entries, entry_bytes, static_cast<double>(bundle.size()) / 1e6, test::RegistryServer::binary().c_str(),
              runs);

  const char* cli = KJIT_CLI_PATH;
  const bool with_cli = cli[0] != '\0' && fs::exists(cli);
  std::vector<double> push_us, push_raw_us, pull_us, pull_raw_us, cli_push_us, cli_pull_us;
  for (int run_i = 0; run_i < runs; ++run_i) {
    test::RegistryServer server(tmp / fmt::format("registry-{}", run_i));
    const std::string host = server.host();
    // Alternating: kjit first on even runs, the floor first on odd ones.
    std::string digest, raw_digest;
    auto kjit_push = [&] {
      const double t = now_us();
      auto pushed = registry(fmt::format("oci://{}/fleet/warm:run{}", host, run_i)).push(bundle);
      push_us.push_back(now_us() - t);
      if (!pushed) {
        std::fprintf(stderr, "bench_oci_bundle: push: %s\n", pushed.error().message.c_str());
        std::exit(1);
      }
      digest = *pushed;
    };
    auto floor_push = [&] {
      const double t = now_us();
      raw_digest = raw_push(host, bundle);
      push_raw_us.push_back(now_us() - t);
    };
    auto kjit_pull = [&] {
      const double t = now_us();
      auto pulled = registry(fmt::format("oci://{}/fleet/warm@{}", host, digest)).pull(1ull << 34);
      pull_us.push_back(now_us() - t);
      if (!pulled || pulled->bytes.size() != bundle.size()) {
        std::fprintf(stderr, "bench_oci_bundle: pull: %s\n", pulled ? "wrong size" : pulled.error().message.c_str());
        std::exit(1);
      }
    };
    auto floor_pull = [&] {
      const double t = now_us();
      raw_pull(host, raw_digest);
      pull_raw_us.push_back(now_us() - t);
    };
    if (run_i % 2 == 0) {
      kjit_push(), floor_push(), kjit_pull(), floor_pull();
    } else {
      floor_push(), kjit_push(), floor_pull(), kjit_pull();
    }
    if (with_cli) {
      // The user's commands: the CI's cache pushed as a signed bundle; a node's empty cache pulls it.
      test::RegistryServer fresh(tmp / fmt::format("registry-cli-{}", run_i));
      const std::string env = fmt::format(
          "env -u KJIT_REMOTE_CACHE -u KJIT_REMOTE_SECRET_FILE KJIT_REMOTE_SIGNING_KEY_FILE={} "
          "KJIT_REMOTE_PUBLIC_KEY_FILE={}",
          (tmp / "signing.key").string(), (tmp / "public.key").string());
      double t = now_us();
      const std::string pushed = run(fmt::format("{} {} --cache-dir {} -q --json cache bundle push oci://{}/fleet/cli:run{}",
                                                 env, cli, (tmp / "ci").string(), fresh.host(), run_i));
      cli_push_us.push_back(now_us() - t);
      const auto at = pushed.find("sha256:");
      const std::string cli_digest = pushed.substr(at, 7 + 64);
      const fs::path node = tmp / fmt::format("node-{}", run_i);
      t = now_us();
      run(fmt::format("{} {} --cache-dir {} -q --json cache bundle pull oci://{}/fleet/cli@{}", env, cli, node.string(),
                      fresh.host(), cli_digest));
      cli_pull_us.push_back(now_us() - t);
      fs::remove_all(node);
    }
  }

  const double mb = static_cast<double>(bundle.size()) / 1e6;
  auto line = [&](const char* what, const std::vector<double>& k, const std::vector<double>& f) {
    const double km = median(k) / 1e3, fm = median(f) / 1e3;
    std::printf("%-54s kjit %8.1f ms (%6.1f MB/s)   floor %8.1f ms   ratio %5.2f\n", what, km, mb / (km / 1e3), fm,
                km / fm);
  };
  line("push (blob + config + manifest) vs one blob upload", push_us, push_raw_us);
  line("pull by digest (manifest + blob, digests) vs blob GET", pull_us, pull_raw_us);
  if (with_cli) {
    std::printf("%-54s %8.1f ms\n", "kjit cache bundle push (export + sign + push), CLI", median(cli_push_us) / 1e3);
    std::printf("%-54s %8.1f ms\n", "kjit cache bundle pull (pull + verify + import), CLI", median(cli_pull_us) / 1e3);
  } else {
    std::printf("(no kjit CLI built: the end-to-end rows are left out)\n");
  }
  curl_global_cleanup();
  return 0;
}
