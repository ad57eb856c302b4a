// The S3 backend of RemoteStore against a real S3 server (s3rver, which checks SigV4 signatures)
// and Debian's s3cmd: values under <prefix>/ac/<sha256 of the name>, range reads, the keep-signed
// write, and a clear error for each thing that can be wrong (bucket, region, endpoint,
// credentials, prefix, the URL itself) that never shows a secret.
#include "core/cache/remote/remote_backend.hpp"
#include "core/cache/remote/remote_store.hpp"
#include "core/cache/remote/remote_tier.hpp"
#include "support/http_server.hpp"
#include "support/s3_server.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tests/unit/test_cache_support.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sodium.h>

#include <chrono>
#include <cstdlib>

using namespace kjit;
using namespace kjit::cache;
using namespace std::chrono_literals;

namespace {

const RemoteOpenOptions k_options{{1s, 3s}, {}};

std::unique_ptr<RemoteStore> store(const std::string& url) {
  auto s = open_remote_store(url, k_options);
  REQUIRE_MESSAGE(s, (s ? "" : s.error().message));
  return std::move(*s);
}

// The object kjit keeps a name's value in, under `prefix`.
std::string object_of(const std::string& prefix, std::string_view name) {
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(digest, reinterpret_cast<const unsigned char*>(name.data()), name.size());
  std::string out = prefix.empty() ? "ac/" : prefix + "/ac/";
  for (unsigned char b : digest) out += fmt::format("{:02x}", b);
  return out;
}

// The message of a get() that must fail.
std::string get_failure(const std::string& url) {
  auto s = open_remote_store(url, k_options);
  if (!s) return s.error().message;
  auto r = (*s)->get("kjit:abc", 1 << 20);
  REQUIRE_FALSE(r);
  return r.error().message;
}

}  // namespace

TEST_SUITE("S3Store") {
  TEST_CASE("values round-trip under prefix/ac/sha256 with range reads and the keep-signed write") {
    KJIT_REQUIRE_SERVER(test::s3_unavailable);
    test::TempDir tmp;
    test::S3Server server(tmp / "s3");
    test::S3Server::use_credentials();
    auto s = store(server.url("team/kjit/"));  // a trailing '/' is dropped
    CHECK(s->url() == server.url("team/kjit/"));
    auto none = s->get("kjit:00", 1 << 20);
    REQUIRE_MESSAGE(none, (none ? "" : none.error().message));
    CHECK_FALSE(none->has_value());

    const std::string value = "KJIT" + std::string(6000, 'v');
    REQUIRE(s->put("kjit:01", value, 0ms));
    CHECK(test::read_file(server.object_file(object_of("team/kjit", "kjit:01"))) == value);
    auto got = s->get("kjit:01", 1 << 20);
    REQUIRE(got);
    CHECK(**got == value);
    // A value over what the caller takes: refused from its length, not read.
    auto big = s->get("kjit:01", 100);
    REQUIRE_FALSE(big);
    CHECK(big.error().reason == system::Failure::Reason::too_large);

    // The keep-signed write: a value that starts with a kept prefix stays (a Range read first).
    REQUIRE(s->put("kjit:02", "KJSG" + std::string(100, 's'), 0ms));
    auto kept = s->put_unless_prefixed("kjit:02", "KJIT-unsigned", 0ms, {"KJSG", "KJED"});
    REQUIRE(kept);
    CHECK_FALSE(*kept);
    CHECK(**s->get("kjit:02", 1 << 20) == "KJSG" + std::string(100, 's'));
    auto written = s->put_unless_prefixed("kjit:03", "KJIT-fresh", 0ms, {"KJSG", "KJED"});
    REQUIRE(written);
    CHECK(*written);
    CHECK(**s->get("kjit:03", 1 << 20) == "KJIT-fresh");

    // No locks: the row says so and the calls fail.
    CHECK_FALSE(remote_backend_of(s->url())->can.locks);
    CHECK_FALSE(s->try_lock("kjit:lock:1", "t", 1s));
    auto pong = s->ping();
    REQUIRE_MESSAGE(pong, (pong ? "" : pong.error().message));
    CHECK(pong->starts_with("s3 404 NoSuchKey in us-east-1"));
  }

  TEST_CASE("s3cmd reads what kjit wrote and kjit reads what s3cmd wrote") {
    KJIT_REQUIRE_SERVER(test::s3cmd_unavailable);
    test::TempDir tmp;
    test::S3Server server(tmp / "s3");
    test::S3Server::use_credentials();
    test::S3Cmd s3cmd(server, tmp.path());
    Stats stats;
    RemoteConfig c;
    c.url = server.url("ci");
    c.signer = Signer("fleet secret 61");
    auto tier = RemoteTier::open(c, stats, {});
    REQUIRE_MESSAGE(tier, (tier ? "" : tier.error().message));

    const Key key = test::test_key(6501);
    const std::string entry = serialize(key, test::test_entry(key, 6000));
    REQUIRE((*tier)->put_async(key, entry));
    (*tier)->drain();
    std::string out;
    const std::string object = "s3://kjit/" + object_of("ci", "kjit:" + key.hex());
    REQUIRE_MESSAGE(s3cmd.run(fmt::format("get --force {} '{}'", object, (tmp / "got").string()), out) == 0, out);
    const std::string got = test::read_file(tmp / "got");
    CHECK(got.substr(0, 4) == "KJSG");
    CHECK(got.substr(4 + 32) == entry);  // KJSG, the 32-byte tag, then the entry

    // What s3cmd uploads (the signed value of another key, made here) is a hit for kjit.
    const Key other = test::test_key(6502);
    const std::string other_entry = serialize(other, test::test_entry(other, 5000));
    test::write_file(tmp / "value", seal_value(&*c.signer, other_entry));
    const std::string target = "s3://kjit/" + object_of("ci", "kjit:" + other.hex());
    REQUIRE_MESSAGE(s3cmd.run(fmt::format("put '{}' {}", (tmp / "value").string(), target), out) == 0, out);
    RemoteGet g = (*tier)->get(other);
    REQUIRE_MESSAGE(g.outcome == RemoteGet::Outcome::hit, g.message);
    CHECK(g.bytes == other_entry);
    CHECK(stats.snapshot().remote_http_hits == 1);
  }

  TEST_CASE("a wrong bucket credentials endpoint or region is an error naming it and never the secret") {
    KJIT_REQUIRE_SERVER(test::s3_unavailable);
    test::TempDir tmp;
    test::S3Server server(tmp / "s3");
    test::S3Server::use_credentials();

    std::string m = get_failure(server.url("p", "no-such-bucket"));
    CHECK_MESSAGE(m.find("the bucket \"no-such-bucket\" does not exist at " + server.endpoint()) != std::string::npos, m);

    ::setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-Zq81", 1);
    m = get_failure(server.url("p"));
    CHECK_MESSAGE(m.find("the secret access key from AWS_ACCESS_KEY_ID does not match its key id") != std::string::npos, m);
    CHECK(m.find("wrong-secret-Zq81") == std::string::npos);
    ::setenv("AWS_ACCESS_KEY_ID", "AKIAUNKNOWN000000000", 1);
    m = get_failure(server.url("p"));
    CHECK_MESSAGE(m.find("knows no such access key id, from AWS_ACCESS_KEY_ID") != std::string::npos, m);

    // From a profile of a shared credentials file.
    ::unsetenv("AWS_ACCESS_KEY_ID");
    ::unsetenv("AWS_SECRET_ACCESS_KEY");
    test::write_file(tmp / "credentials",
                     fmt::format("[default]\naws_access_key_id = AKIAOTHER\naws_secret_access_key = nope\n\n[ci]\n"
                                 "aws_access_key_id = {}\naws_secret_access_key = {}\n",
                                 test::S3Server::k_access_key, test::S3Server::k_secret));
    ::setenv("AWS_SHARED_CREDENTIALS_FILE", (tmp / "credentials").c_str(), 1);
    ::setenv("AWS_PROFILE", "ci", 1);
    auto s = store(server.url("p"));
    REQUIRE(s->put("kjit:10", "KJIT-profile", 0ms));
    CHECK(**s->get("kjit:10", 1 << 20) == "KJIT-profile");
    ::setenv("AWS_PROFILE", "default", 1);
    m = get_failure(server.url("p"));
    CHECK_MESSAGE(m.find("profile default of " + (tmp / "credentials").string()) != std::string::npos, m);
    ::setenv("AWS_PROFILE", "missing", 1);
    m = get_failure(server.url("p"));
    CHECK_MESSAGE(m.find("has no profile [missing]") != std::string::npos, m);
    CHECK(m.find(test::S3Server::k_secret) == std::string::npos);
    ::unsetenv("AWS_SHARED_CREDENTIALS_FILE");
    ::unsetenv("AWS_PROFILE");
    test::S3Server::use_credentials();

    // An endpoint nobody listens on.
    m = get_failure("s3://kjit/p?endpoint=http://127.0.0.1:1");
    CHECK_MESSAGE(m.find("(the endpoint http://127.0.0.1:1)") != std::string::npos, m);

    // A wrong region, as AWS answers it (s3rver signs with any region): the region the bucket is in.
    const std::string document =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AuthorizationHeaderMalformed</Code><Message>The "
        "authorization header is malformed; the region 'us-east-1' is wrong; expecting 'eu-west-1'</Message>"
        "<Region>eu-west-1</Region></Error>";
    test::ScriptedHttpServer aws(fmt::format("HTTP/1.1 400 Bad Request\r\nContent-Type: application/xml\r\n"
                                             "x-amz-bucket-region: eu-west-1\r\nContent-Length: {}\r\n"
                                             "Connection: close\r\n\r\n{}",
                                             document.size(), document),
                                 test::ScriptedHttpServer::After::close);
    const std::string aws_endpoint = aws.url().substr(0, aws.url().rfind('/'));
    m = get_failure("s3://kjit/p?endpoint=" + aws_endpoint);
    CHECK_MESSAGE(m.find("the wrong region: signed for us-east-1 (from the default), and the bucket \"kjit\" is in "
                         "eu-west-1 (set ?region=eu-west-1") != std::string::npos,
                  m);

    // Credentials in the URL, bad names, unknown parameters: refused when opened.
    const std::pair<const char*, const char*> bad[] = {
        {"s3://AKIA:secret@kjit/p", "credentials never go in the URL"},
        {"s3://Bad_Bucket/p", "is no S3 bucket name"},
        {"s3://kjit//p", "the prefix"},
        {"s3://kjit/p?colour=red", "\"colour=red\" is not region=R or endpoint=URL"},
        {"s3://kjit/p?endpoint=ftp://h", "the endpoint \"ftp://h\""},
        {"s3://kjit/p?region=eu west", "no region name"},
    };
    for (const auto& [url, what] : bad) {
      auto r = open_remote_store(url, k_options);
      REQUIRE_MESSAGE(!r, url);
      CHECK_MESSAGE(r.error().message.find(what) != std::string::npos, r.error().message);
      CHECK(r.error().message.find("secret") == std::string::npos);
    }
    // No credentials anywhere.
    for (const char* v : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}) ::unsetenv(v);
    ::setenv("AWS_SHARED_CREDENTIALS_FILE", (tmp / "absent").c_str(), 1);
    auto r = open_remote_store(server.url("p"), k_options);
    REQUIRE_FALSE(r);
    CHECK_MESSAGE(r.error().message.find("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are unset") != std::string::npos,
                  r.error().message);
    ::unsetenv("AWS_SHARED_CREDENTIALS_FILE");
  }
}
