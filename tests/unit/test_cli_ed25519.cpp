// Signatures only CI can make, end to end through real kjit processes and a real redis-server: CI
// (KJIT_REMOTE_SIGNING_KEY_FILE) compiles and sends ed25519-signed values; a node holding only
// the public key (KJIT_REMOTE_PUBLIC_KEY_FILE) loads them, refuses HMAC-only, unsigned and
// forged values (compiles instead, counted in remote_rejected) and sends Redis no write of any
// kind: its command counters show reads only, and no key appears.
#include "support/helpers.hpp"
#include "support/redis_server.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>

namespace {

const std::string k_kjit = std::string(KJIT_BINARY_DIR) + "/cli/kjit";

kjit::test::CommandResult kjit_remote(const std::string& url, const std::string& env, const std::string& args) {
  // A generous timeout: a loaded test machine must not turn a remote hit into a compile.
  return kjit::test::run_command(
      fmt::format("KJIT_REMOTE_CACHE='{}' KJIT_REMOTE_TIMEOUT=2s {} {} {} 2>/dev/null", url, env, k_kjit, args));
}

std::map<std::string, int> outcomes(const kjit::test::CommandResult& r) {
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  REQUIRE_MESSAGE((!j.is_discarded() && j.is_array()), r.out);
  std::map<std::string, int> counts;
  for (const auto& e : j) counts[e.value("outcome", std::string("error"))]++;
  return counts;
}

// Redis's calls per command (INFO commandstats), through redis-cli.
std::map<std::string, long> command_calls(const kjit::test::RedisServer& redis) {
  auto r = kjit::test::run_command("redis-cli -s " + redis.socket().string() + " INFO commandstats");
  REQUIRE(r.code == 0);
  std::map<std::string, long> out;
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) {
    // cmdstat_get:calls=3,usec=...
    if (line.rfind("cmdstat_", 0) != 0) continue;
    const auto colon = line.find(':');
    const auto calls = line.find("calls=");
    if (colon == std::string::npos || calls == std::string::npos) continue;
    out[line.substr(8, colon - 8)] = std::stol(line.substr(calls + 6));
  }
  return out;
}

std::vector<std::string> sorted_keys(const kjit::test::RedisServer& redis) {
  auto k = redis.keys("*");
  std::sort(k.begin(), k.end());
  return k;
}

std::string kernel(int i) {
  return fmt::format("extern \"C\" __global__ void e{}(float* x) {{ x[threadIdx.x] = x[threadIdx.x] * {}.0f; }}\n", i,
                     i + 5);
}

}  // namespace

TEST_SUITE("cli ed25519") {
  TEST_CASE("a public-key node loads what CI signed and refuses HMAC-only and forged values and never writes") {
    kjit::test::TempDir dir;
    kjit::test::RedisServer redis(dir / "redis");
    if (kjit::test::run_command("redis-cli --version >/dev/null 2>&1").code != 0) {
      FAIL("redis-cli is missing (Debian's redis-tools, with redis-server)");
    }
    std::string files;
    for (int i = 0; i < 6; ++i) {
      kjit::test::write_file(dir / fmt::format("e{}.cu", i), kernel(i));
      files += " " + (dir / fmt::format("e{}.cu", i)).string();
    }
    REQUIRE(kjit::test::run_command(k_kjit + " cache keygen --out " + (dir / "ci").string() + " >/dev/null 2>&1").code == 0);
    const std::string signing = "KJIT_REMOTE_SIGNING_KEY_FILE=" + (dir / "ci.key").string();
    const std::string public_key = "KJIT_REMOTE_PUBLIC_KEY_FILE=" + (dir / "ci.pub").string();
    kjit::test::write_file(dir / "secret", "an HMAC team's secret\n");

    // CI compiles e0..e3 and sends them signed. An HMAC node sends e4; e5 is unsigned.
    const std::string first_four = files.substr(0, files.find(" " + (dir / "e4.cu").string()));
    auto ci = kjit_remote(redis.url(), signing,
                          "--cache-dir " + (dir / "ci-cache").string() + " compile --json --arch sm_90" + first_four);
    REQUIRE(outcomes(ci)["compiled"] == 4);
    CHECK(redis.keys("kjit:*").size() == 4);
    for (const auto& k : redis.keys("kjit:*")) CHECK(redis.get(k)->substr(0, 4) == "KJED");
    auto team = kjit_remote(redis.url(), "KJIT_REMOTE_SECRET_FILE=" + (dir / "secret").string(),
                            "--cache-dir " + (dir / "team").string() + " compile --json --arch sm_90 " +
                                (dir / "e4.cu").string());
    REQUIRE(outcomes(team)["compiled"] == 1);
    auto plain = kjit_remote(redis.url(), "", "--cache-dir " + (dir / "plain").string() + " compile --json --arch sm_90 " +
                                                  (dir / "e5.cu").string());
    REQUIRE(outcomes(plain)["compiled"] == 1);
    REQUIRE(redis.keys("kjit:*").size() == 6);
    // e3's value forged: a byte of its cubin changed, the signature kept.
    auto e3 = nlohmann::json::parse(ci.out)[3]["key"].get<std::string>();
    std::string forged = *redis.get("kjit:" + e3);
    forged[forged.size() - 100] = static_cast<char>(forged[forged.size() - 100] ^ 0x40);
    redis.set("kjit:" + e3, forged);

    const auto keys_before = sorted_keys(redis);
    const auto calls_before = command_calls(redis);
    auto node = kjit_remote(redis.url(), public_key, "--cache-dir " + (dir / "node").string() +
                                                         " compile --json --arch sm_90" + files);
    auto counts = outcomes(node);
    CHECK(counts["remote_hit"] == 3);  // e0..e2
    CHECK(counts["compiled"] == 3);    // e3 forged, e4 HMAC-only, e5 unsigned
    auto stats = nlohmann::json::parse(
        kjit_remote(redis.url(), public_key, "--cache-dir " + (dir / "node").string() + " --json cache stats").out);
    CHECK(stats["remote"]["rejected"] == 3);
    CHECK(stats["remote"]["hits"] == 3);
    CHECK(stats["remote"]["writes"] == 0);

    // Nothing written, no lock taken: no key appeared, and Redis saw reads only.
    CHECK(sorted_keys(redis) == keys_before);
    CHECK(*redis.get("kjit:" + e3) == forged);
    const auto calls_after = command_calls(redis);
    // The test's own KEYS and GET are among them: reads all.
    const std::set<std::string> reads = {"get",    "keys",  "info",   "ping", "command",
                                         "client", "hello", "select", "auth", "strlen"};
    for (const auto& [command, calls] : calls_after) {
      const long before = calls_before.count(command) ? calls_before.at(command) : 0;
      if (calls != before) CHECK_MESSAGE(reads.count(command) == 1, "the public-key node sent " << command);
    }
    CHECK(calls_after.at("get") > calls_before.at("get"));

    // A signing node (CI) loads its own values, and the forged one is compiled again there too.
    auto ci2 = kjit_remote(redis.url(), signing, "--cache-dir " + (dir / "ci2").string() +
                                                     " compile --json --arch sm_90 " + (dir / "e0.cu").string() + " " +
                                                     (dir / "e3.cu").string());
    auto c2 = outcomes(ci2);
    CHECK(c2["remote_hit"] == 1);
    CHECK(c2["compiled"] == 1);
  }
}
