// bench_s3_hit: a remote hit from an S3 level for a 6 KB entry, against a real S3 server on
// loopback (s3rver, started as the tests start it: tests/support/s3_server.cpp; no GPU, no CUDA):
//   1. warm: RemoteTier::get (signed SigV4 GET, the value's HMAC and checksums checked) on its
//      kept connection, against the floor measured in the same run, alternating: a bare libcurl
//      GET of the same object signed with CURLOPT_AWS_SIGV4 on a kept handle;
//   2. cold: a fresh tier (open, connect, signed GET, checks) against a fresh libcurl handle's
//      signed GET.
// Prints p50 and p90 of each and the ratios kjit/floor.   bench_s3_hit [runs]
#include "core/cache/remote/remote_tier.hpp"
#include "support/s3_server.hpp"
#include "support/temp_dir.hpp"
#include "tests/unit/test_cache_support.hpp"

#include <curl/curl.h>
#include <fmt/format.h>
#include <sodium.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace kjit;
using Clock = std::chrono::steady_clock;

namespace {

double us_since(Clock::time_point t) { return std::chrono::duration<double, std::micro>(Clock::now() - t).count(); }

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

std::string sha256_hex(std::string_view bytes) {
  unsigned char d[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(d, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  std::string out;
  for (unsigned char b : d) out += fmt::format("{:02x}", b);
  return out;
}

// The floor: one signed GET on `curl` (a kept or a fresh handle).
std::size_t raw_get(CURL* curl, const std::string& url, curl_slist* headers) {
  std::string body;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, "aws:amz:us-east-1:s3");
  const std::string user = fmt::format("{}:{}", test::S3Server::k_access_key, test::S3Server::k_secret);
  curl_easy_setopt(curl, CURLOPT_USERPWD, user.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  long status = 0;
  if (curl_easy_perform(curl) != CURLE_OK || curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK ||
      status != 200) {
    std::fprintf(stderr, "the floor's GET failed (HTTP %ld)\n", status);
    std::exit(1);
  }
  return body.size();
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 200;
  if (const std::string why = test::s3_unavailable(); !why.empty()) {
    std::printf("bench_s3_hit: skipped: %s\n", why.c_str());
    return 0;
  }
  if (sodium_init() < 0) return 1;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  test::TempDir dir;
  test::S3Server server(dir / "s3");
  test::S3Server::use_credentials();
  cache::Stats stats;
  cache::RemoteConfig config;
  config.url = server.url("bench");
  config.signer = cache::Signer("bench fleet secret");
  config.timeouts = {std::chrono::seconds(1), std::chrono::seconds(2)};
  auto writer = cache::RemoteTier::open(config, stats, {});
  if (!writer) {
    std::fprintf(stderr, "%s\n", writer.error().message.c_str());
    return 1;
  }
  const cache::Key key = test::test_key(60);
  const std::string entry = cache::serialize(key, test::test_entry(key, 6000));
  (*writer)->put_async(key, entry);
  (*writer)->drain();
  const std::string object =
      fmt::format("{}/kjit/bench/ac/{}", server.endpoint(), sha256_hex("kjit:" + key.hex()));
  curl_slist* headers = curl_slist_append(nullptr, ("x-amz-content-sha256: " + sha256_hex("")).c_str());

  // 1. warm: kept connections, alternating.
  auto tier = cache::RemoteTier::open(config, stats, {});
  CURL* kept = curl_easy_init();
  std::size_t value_size = raw_get(kept, object, headers);
  if ((*tier)->get(key).outcome != cache::RemoteGet::Outcome::hit) {
    std::fprintf(stderr, "no hit\n");
    return 1;
  }
  std::vector<double> kjit_warm, floor_warm, kjit_cold, floor_cold;
  for (int i = 0; i < runs; ++i) {
    auto t = Clock::now();
    const bool hit = (*tier)->get(key).outcome == cache::RemoteGet::Outcome::hit;
    kjit_warm.push_back(us_since(t));
    t = Clock::now();
    raw_get(kept, object, headers);
    floor_warm.push_back(us_since(t));
    if (!hit) return 1;
  }
  curl_easy_cleanup(kept);
  // 2. cold: a fresh tier or handle each time.
  for (int i = 0; i < std::max(runs / 4, 10); ++i) {
    auto t = Clock::now();
    auto fresh = cache::RemoteTier::open(config, stats, {});
    const bool hit = (*fresh)->get(key).outcome == cache::RemoteGet::Outcome::hit;
    kjit_cold.push_back(us_since(t));
    fresh->reset();
    t = Clock::now();
    CURL* c = curl_easy_init();
    raw_get(c, object, headers);
    curl_easy_cleanup(c);
    floor_cold.push_back(us_since(t));
    if (!hit) return 1;
  }
  curl_slist_free_all(headers);
  std::printf("S3 remote hit, %zu-byte value (a %zu-byte entry, HMAC-signed), s3rver on loopback, %d runs\n",
              value_size, entry.size(), runs);
  std::printf("%-44s %10s %10s\n", "", "p50 us", "p90 us");
  std::printf("%-44s %10.0f %10.0f\n", "kjit RemoteTier::get, kept connection", quantile(kjit_warm, 0.5),
              quantile(kjit_warm, 0.9));
  std::printf("%-44s %10.0f %10.0f\n", "floor: libcurl SigV4 GET, kept handle", quantile(floor_warm, 0.5),
              quantile(floor_warm, 0.9));
  std::printf("%-44s %10.0f %10.0f\n", "kjit fresh tier: open + connect + GET", quantile(kjit_cold, 0.5),
              quantile(kjit_cold, 0.9));
  std::printf("%-44s %10.0f %10.0f\n", "floor: fresh handle: connect + GET", quantile(floor_cold, 0.5),
              quantile(floor_cold, 0.9));
  std::printf("ratio kjit/floor p50: warm %.2f, cold %.2f\n", quantile(kjit_warm, 0.5) / quantile(floor_warm, 0.5),
              quantile(kjit_cold, 0.5) / quantile(floor_cold, 0.5));
  return 0;
}
