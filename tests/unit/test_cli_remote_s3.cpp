// The remote tier's S3 level end to end, through real kjit processes and a real S3 server
// (s3rver on loopback, checking SigV4): what one node compiles a fresh node gets under
// --require-hit, Debian's s3cmd reads the very entry kjit wrote, a miss under --require-hit names
// the S3 level, and `kjit cache remote ping` names a wrong bucket or secret (exit 1) and never
// shows the secret.
#include "support/helpers.hpp"
#include "support/s3_server.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sodium.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

using Run = kjit::test::CommandResult;

const std::string k_kjit = std::string(KJIT_BINARY_DIR) + "/cli/kjit";

nlohmann::json parse(const Run& r) {
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  REQUIRE_MESSAGE(!j.is_discarded(), r.out);
  return j;
}

std::string write_kernels(const kjit::test::TempDir& dir, int from, int n) {
  std::string files;
  for (int i = from; i < from + n; ++i) {
    auto f = dir / fmt::format("s{}.cu", i);
    kjit::test::write_file(f, "extern \"C\" __global__ void s" + std::to_string(i) + "(float* x) { x[threadIdx.x] += " +
                                  std::to_string(i + 3) + ".0f; }\n");
    files += " " + f.string();
  }
  return files;
}

std::string object_of(const std::string& prefix, const std::string& key_hex) {
  const std::string name = "kjit:" + key_hex;
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(digest, reinterpret_cast<const unsigned char*>(name.data()), name.size());
  std::string out = prefix + "/ac/";
  for (unsigned char b : digest) out += fmt::format("{:02x}", b);
  return out;
}

}  // namespace

TEST_SUITE("cli remote s3") {
  TEST_CASE("nodes share kernels through S3: a fresh node hits under --require-hit and s3cmd reads what kjit wrote") {
    KJIT_REQUIRE_SERVER(kjit::test::s3cmd_unavailable);
    kjit::test::TempDir dir;
    kjit::test::S3Server server(dir / "s3");
    kjit::test::S3Server::use_credentials();  // the kjit processes inherit them
    const std::string url = server.url("fleet");
    const std::string files = write_kernels(dir, 0, 3);
    auto kjit = [&](const std::string& node, const std::string& args) {
      return kjit::test::run_command(fmt::format("KJIT_REMOTE_TIMEOUT=2s {} --cache-dir {} --remote '{}' {} 2>{}",
                                                 k_kjit, (dir / node).string(), url, args, (dir / "err").string()));
    };

    const auto ci = parse(kjit("ci", "compile --json --arch sm_90" + files));
    REQUIRE(ci.size() == 3);
    for (const auto& j : ci) CHECK(j["outcome"] == "compiled");
    const Run fresh = kjit("fresh", "--require-hit compile --json --arch sm_90" + files);
    CHECK(fresh.code == 0);
    for (const auto& j : parse(fresh)) CHECK(j["outcome"] == "remote_hit");
    const auto stats = parse(kjit("fresh", "--json cache stats"));
    CHECK(stats["remote"]["http_hits"] == 3);
    CHECK(stats["compiles"] == 0);

    // s3cmd, an AWS client of its own, reads the value kjit wrote: the entry CI's disk holds.
    kjit::test::S3Cmd s3cmd(server, dir.path());
    const std::string key = ci[0]["key"];
    std::string out;
    REQUIRE_MESSAGE(s3cmd.run(fmt::format("get --force s3://kjit/{} '{}'", object_of("fleet", key),
                                          (dir / "fetched").string()),
                              out) == 0,
                    out);
    const auto entry = dir / "ci" / key.substr(0, 2) / (key.substr(2) + ".kjit");
    CHECK(kjit::test::read_file(dir / "fetched") == kjit::test::read_file(entry));

    // A kernel nobody compiled: under --require-hit, exit 1 naming the S3 level's miss.
    const std::string other = write_kernels(dir, 10, 1);
    const Run miss = kjit("fresh", "--require-hit compile --json --arch sm_90" + other);
    CHECK(miss.code == 1);
    const auto e = parse(miss).at(0)["error"];
    CHECK(e["kind"] == "miss");
    CHECK(e["tiers"][1]["why"].get<std::string>().rfind("absent from " + url, 0) == 0);
  }

  TEST_CASE("kjit cache remote ping names a wrong bucket or secret exits 1 and never shows the secret") {
    KJIT_REQUIRE_SERVER(kjit::test::s3_unavailable);
    kjit::test::TempDir dir;
    kjit::test::S3Server server(dir / "s3");
    kjit::test::S3Server::use_credentials();
    auto ping = [&](const std::string& url, const std::string& env = "") {
      return kjit::test::run_command(fmt::format("{} {} --cache-dir {} --json cache remote ping --remote '{}' 2>&1", env,
                                                 k_kjit, (dir / "c").string(), url));
    };
    const Run good = ping(server.url("fleet"));
    CHECK(good.code == 0);
    CHECK(parse(good)["server"].get<std::string>().starts_with("s3 404 NoSuchKey in us-east-1"));

    const Run bucket = ping(server.url("fleet", "other-bucket"));
    CHECK(bucket.code == 1);
    CHECK(parse(bucket)["error"]["message"].get<std::string>().find("the bucket \"other-bucket\" does not exist") !=
          std::string::npos);

    const Run secret = ping(server.url("fleet"), "AWS_SECRET_ACCESS_KEY=not-the-Secret-91");
    CHECK(secret.code == 1);
    CHECK(parse(secret)["error"]["message"].get<std::string>().find("SignatureDoesNotMatch") != std::string::npos);
    CHECK(secret.out.find("not-the-Secret-91") == std::string::npos);

    const Run none = ping(server.url("fleet"), "env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY HOME=" +
                                                   (dir / "home").string());
    CHECK(none.code == 2);
    CHECK(none.out.find("no AWS credentials") != std::string::npos);
  }
}
